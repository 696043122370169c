"""The Replays tab: browse, filter, read and compare logged runs.

``layout`` builds the components and wires them; ``handlers`` are its thin event functions over
``core.runs``; ``beliefs`` draws a decision-driven agent's logged beliefs beside the true posterior; its figures come from ``demo.plots``, which Live play shares.
"""

__all__ = ["beliefs", "handlers", "layout"]

"""The Replays tab: browse, filter, read and compare logged runs.

``layout`` builds the components and wires them; ``handlers`` are its thin event functions over
``core.runs``; its figures come from ``demo.plots``, which Live play shares.
"""

__all__ = ["handlers", "layout"]

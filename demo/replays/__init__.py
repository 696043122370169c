"""The Replays tab: browse, filter, read and compare logged runs.

``layout`` builds the components and wires them; ``handlers`` are its thin event functions over
``core.runs``; ``plots`` draws its plotly figures.
"""

__all__ = ["handlers", "layout", "plots"]

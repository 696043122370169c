"""The Decisions tab: ask a decision model typed questions, and measure its calibration.

``layout`` builds the components and named API endpoints; ``handlers`` are its thin event
functions over ``core.decision``; ``builder`` turns the question builder's rows into typed
questions; ``examples`` holds the example states; ``plots`` draws answers, reliability diagrams,
selective curves and probe bars.
"""

__all__ = ["builder", "examples", "handlers", "layout", "plots"]

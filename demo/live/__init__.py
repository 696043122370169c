"""The Live play tab: watch a model, play the user, or play the agent, one streamed turn at a time.

``layout`` builds the components and named API endpoints; ``handlers`` are thin streaming
generators over ``core.live``.
"""

__all__ = ["handlers", "layout"]

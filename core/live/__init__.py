"""Live play: a session stepped turn by turn against a model, with the turn streamed token by token.

``session`` holds a browser session's episodes as a deep-copyable record (watch, you are the user,
you are the agent); ``streaming`` samples one agent turn in a worker thread with a stop flag.
"""

__all__ = ["session", "streaming"]

"""Live play: a session stepped turn by turn against a model, with the turn streamed token by token.

``session`` holds a browser session's episodes as a deep-copyable record (watch, you are the user,
you are the agent) and steps it with a finished turn; ``streaming`` samples one agent turn in a
worker thread with a stop flag; ``turns`` plays a local model's turns (``run_model`` loads it once);
``endpoint_turns`` plays them through an OpenAI-compatible chat endpoint; ``agent_turns`` plays the
ask-or-act agent (``decision:MODEL``: a decision model's beliefs decide each turn, nothing generated).
Imports point one way: ``turns`` -> ``endpoint_turns``, ``agent_turns`` -> ``session`` -> ``streaming``.
"""

__all__ = ["agent_turns", "endpoint_turns", "session", "streaming", "turns"]

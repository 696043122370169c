"""The tiny model shape of the train/ tests (its tokenizer and checkpoint fixtures live in tests/conftest.py,
shared with the core tests that load adapters over it)."""

TINY = dict(hidden_size=16, layers=2, heads=2, kv_heads=1, intermediate_size=32, vocab_size=600)
"""A model of a few thousand parameters: every test step runs in milliseconds."""

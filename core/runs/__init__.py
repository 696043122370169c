"""Runs: episodes played and logged, summarised, compared, imported and kept on disk.

``episode_log`` (JSONL logs with line-numbered validation), ``summary`` (``RunSummary``),
``comparison`` (the one paired comparison of two runs, rubric versions checked), ``episode_table`` (episodes as a filterable pandas table),
``transcripts`` (an episode as chat messages and per-field marks), ``importer`` (the published
ClarifyRL curated traces, re-scored), ``eval`` (``python -m core.runs.eval``: play, log, summarise,
compare), ``replays`` (run folders on disk, safe names, regeneration), ``uploads`` (uploaded runs
held for browser sessions, bounded in memory), ``measured`` (what a model scored in the shipped
runs, quoted before Start) and ``session_runs`` (live sessions' runs: private to
their page, bounded on disk; export downloads bounded the same way).
"""

__all__ = ["comparison", "episode_log", "episode_table", "eval", "importer", "measured", "replays", "session_runs",
           "summary", "transcripts", "uploads"]

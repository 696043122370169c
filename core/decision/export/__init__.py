"""Decision models on disk: ``published`` (the rlcd-decision-only-v1 layout, body and head in the folder;
export, hash-verified loading) and ``adapter`` (clarifylab-decision-adapter-v1: a LoRA adapter and its
letter head over a real base that a package installs, the base hash-checked)."""

__all__ = ["adapter", "published"]

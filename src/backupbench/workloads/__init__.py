"""Backup-operation profiles: what each backup job does to storage, and how to score it."""

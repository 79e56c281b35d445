"""Dedup stage: exact, URL, MinHash-LSH near-duplicate and repeated-paragraph removal (see tasks/dedup/stage.py)."""

"""Dedup stage: exact, URL, MinHash-LSH near-duplicate and repeated-paragraph removal (see flows/dedup_stage.py)."""

"""Data-mixture sampling over token shards (see flows/mixture_stage.py)."""

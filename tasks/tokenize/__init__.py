"""Tokenizer training and tokenization (see flows/tokenizer_stage.py)."""

"""Quality attributes (heuristics, KenLM perplexity, fastText classifier) and the threshold filter."""

"""The quality filter's funnel: documents and word tokens left after each filter family, in the order the
families run, summed over the shards' results."""
from __future__ import annotations


def funnel_rows(results: list[dict], families: list[str]) -> list[dict]:
    documents = sum(result["candidates"] for result in results)
    tokens = sum(result["notes"].get("tokens_in", 0) for result in results)
    rows = [{"step": "scored", "documents": documents, "word_tokens": tokens}]
    for family in families:
        documents -= sum(result["funnel"].get(family, {}).get("documents", 0) for result in results)
        tokens -= sum(result["funnel"].get(family, {}).get("tokens", 0) for result in results)
        rows.append({"step": f"after {family}", "documents": documents, "word_tokens": tokens})
    return rows

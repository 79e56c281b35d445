"""The domain stage's cards: per topic and per format, its size over the whole output (documents and words: the
tokenizer comes after this stage), what characterises it and three example documents, as markdown for a person
to name the clusters and as tables (Prefect and MLflow artifacts)."""
from __future__ import annotations

import numpy as np


def cluster_sizes(results: list[dict], kind: str) -> dict[str, np.ndarray]:
    """Documents and words per cluster of `kind` (topics, formats), summed over the shards."""
    return {measure: np.sum([result["domain_counts"][kind][measure] for result in results], axis=0)
            for measure in ("documents", "words")}


def cards_tables(fitted: dict, results: list[dict]) -> dict[str, list[dict]]:
    tables = {}
    for kind, key, describe in (("topics", "topic", "top_terms"), ("formats", "format", "distinctive")):
        sizes = cluster_sizes(results, kind)
        tables[kind] = [{key: card[key], "documents": int(sizes["documents"][card[key]]),
                         "words": int(sizes["words"][card[key]]), "sample_documents": card["sample_documents"],
                         describe: ", ".join(card[describe]),
                         "example": card["examples"][0]["url"] if card["examples"] else ""}
                        for card in fitted["cards"][kind]]
    return tables


def cards_markdown(fitted: dict, results: list[dict]) -> str:
    lines = [f"Clusters fitted on {fitted['sample_documents']} sampled documents; sizes over the whole output."]
    for kind, key, describe in (("topics", "topic", "top_terms"), ("formats", "format", "distinctive")):
        sizes = cluster_sizes(results, kind)
        total = max(1, int(sizes["documents"].sum()))
        lines += ["", f"## {kind.capitalize()}"]
        for card in fitted["cards"][kind]:
            documents = int(sizes["documents"][card[key]])
            lines += ["", f"### {key} {card[key]}: {documents} documents ({documents / total:.1%}), "
                          f"{int(sizes['words'][card[key]])} words",
                      f"{describe.replace('_', ' ')}: {', '.join(card[describe])}"]
            lines += [f"- {example['url']}: {example['text']}" for example in card["examples"]]
    return "\n".join(lines)

"""A stage's own figures, typed: one dataclass per stage that has any, kept in its manifest's stats under
`figures` and read back by field with `<Stage>Figures.of(stage_result)`.

Two homes, one rule: what is counted per document and summed over shards (languages, record types, drop
reasons, tokens) is `tasks.stats.StageStats`; what the stage as a whole found or decided (the vocabulary, the
drawn tokens, the cut points) is here, once.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Self

FIGURES_KEY = "figures"          # in a manifest's stats


@dataclass(frozen=True)
class StageFigures:
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def of(cls, result: dict) -> Self:
        """From a stage result (or anything with its `stats`), as the manifest recorded them."""
        return cls.from_stats(result["stats"])

    @classmethod
    def from_stats(cls, stats: dict) -> Self:
        return cls(**stats[FIGURES_KEY])


@dataclass(frozen=True)
class TokenizerFigures(StageFigures):
    vocab_size: int
    train_lines: int | None = None                   # None for a given model (not trained here)
    heldout_documents: int | None = None
    heldout_bytes_per_token: float | None = None     # UTF-8 bytes per token on held-out documents


@dataclass(frozen=True)
class MixtureFigures(StageFigures):
    sources: list[dict]              # per source: weight, tokens drawn and available, epochs (tasks.mixture.card)
    train_tokens: int
    train_pieces: int
    validation_tokens: int
    validation_documents: int
    max_abs_weight_error: float      # the drawn shares against the weights, largest absolute difference
    work_bytes: int                  # the passes' scratch files, removed when the stage is done
    work_files: int


@dataclass(frozen=True)
class DedupFigures(StageFigures):
    documents_without_shingles: int
    exact_edges: int
    candidate_pairs: int
    verified_pairs: int
    clusters: int
    documents_in_clusters: int
    propagation_rounds: int
    distinct_paragraphs: int
    repeated_paragraphs: int
    repeated_windows: int
    work_bytes: int
    work_files: int


@dataclass(frozen=True)
class QualityModelsFigures(StageFigures):
    kenlm_languages: list[str]
    classifier: dict | None          # held-out and external evaluation of the fastText classifier


@dataclass(frozen=True)
class QualityFilterFigures(StageFigures):
    funnel: list[dict]               # per check family, in order: documents and tokens left (tasks.quality.funnel)
    kenlm_bucket_edges: dict
    classifier_min_hq_prob: float | None


@dataclass(frozen=True)
class EvalSuiteFigures(StageFigures):
    domains: dict                    # domain -> documents and characters in the suite
    ngrams: int

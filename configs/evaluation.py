"""Recipe model for the ablation's evaluation suite: held-out clean text in named domains, the same for every model.

A domain is a list of sources; each source file (or each article, for WikiText's raw files) is one evaluation
document. Documents are chosen in a seeded order until the domain's character budget is filled, so the suite is
fixed per ablation and does not depend on the file system's listing order.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from configs.base import StrictModel


class EvalDomain(StrictModel):
    paths: list[str] = Field(min_length=1, description=(
        "files, directories or globs; `{data_dir}` stands for the shared data directory"))
    format: Literal["text", "wikitext_articles", "html"] = Field("text", description=(
        "text: one document per file; wikitext_articles: one per ` = Title = ` article of a raw WikiText file; "
        "html: one per (optionally gzipped) HTML file, as plain text"))
    max_chars: int = Field(40_000, ge=100, description="characters of text the domain holds at most")
    max_document_chars: int = Field(8_000, ge=100, description=(
        "a longer document is cut at the last line break before this many characters"))
    min_document_chars: int = Field(200, ge=1, description=(
        "shorter documents are passed over (readability's hand-made unit-test pages, for one)"))
    languages: list[str] = Field(default_factory=list, description=(
        "keep only documents that fastText lid.176 (the recipe's extract.langid model) labels with one of these; "
        "empty keeps every language"))


class EvalSuiteConfig(StrictModel):
    domains: dict[str, EvalDomain] = Field(min_length=1, description="name -> sources; scored separately")
    ngram: int = Field(13, ge=5, le=50, description="n of the word n-grams a contamination check compares")
    seed: int = Field(0, ge=0, description="the order documents are taken in until a domain's budget is full")

    @field_validator("domains")
    @classmethod
    def _names_are_metric_safe(cls, domains: dict[str, EvalDomain]) -> dict[str, EvalDomain]:
        bad = [name for name in domains if not name.replace("_", "").replace("-", "").isalnum()]
        if bad or "macro" in domains:
            raise ValueError(f"domain names must be letters, digits, '-' or '_' and not 'macro', got {bad or ['macro']}")
        return domains

"""How big each corpus size is and how its captures divide among the ground-truth kinds."""
from __future__ import annotations

from dataclasses import dataclass

# Share of the generated captures per kind; the rest (about two thirds) are ordinary originals, as in a real crawl.
KIND_SHARES = {
    "exact_dup": 0.05,
    "near_dup": 0.08,
    "spam": 0.025,
    "boilerplate_heavy": 0.025,
    "bad_charset": 0.05,
    "non_html": 0.035,
    "redirect": 0.025,
    "not_found": 0.02,
    "server_error": 0.015,
}
MIN_TRANSPLANT_SHARE = 0.1     # of the originals, so every size exercises articles written into templates


@dataclass(frozen=True)
class CorpusPlan:
    size: str
    shards: int
    generated: int                  # captures built from the source pages and reference texts
    real_records: int | None        # responses copied from the real WARCs; None copies all of them

    def kind_counts(self) -> dict[str, int]:
        counts = {kind: max(1, round(share * self.generated)) for kind, share in KIND_SHARES.items()}
        return {"original": self.generated - sum(counts.values()), **counts}


PLANS = {
    "small": CorpusPlan("small", shards=4, generated=100, real_records=12),
    "bench": CorpusPlan("bench", shards=16, generated=5300, real_records=None),
}


def plan_for(size: str) -> CorpusPlan:
    if size not in PLANS:
        raise ValueError(f"unknown corpus size {size!r}; expected one of {', '.join(sorted(PLANS))}")
    return PLANS[size]

"""Per-shard statistics every stage reports, and their sum over a stage.

Invariant kept by the stages: every candidate document either comes out or is counted under exactly one
drop reason, so `candidates == documents_out + sum(drops)`. Problems (damaged input) are counted apart.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class StageStats:
    records_read: int = 0
    candidates: int = 0
    documents_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    drops: Counter = field(default_factory=Counter)      # reason -> documents dropped
    problems: Counter = field(default_factory=Counter)   # reason -> damaged-input events (logged with offsets)
    notes: Counter = field(default_factory=Counter)      # informational counts (record types, charset sources)

    def drop(self, reason: str) -> None:
        self.drops[reason] += 1

    def merge(self, other: "StageStats") -> "StageStats":
        for name in ("records_read", "candidates", "documents_out", "bytes_in", "bytes_out", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.drops.update(other.drops)
        self.problems.update(other.problems)
        self.notes.update(other.notes)
        return self

    def to_dict(self) -> dict:
        return {
            "records_read": self.records_read, "candidates": self.candidates,
            "documents_out": self.documents_out, "bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
            "seconds": round(self.seconds, 4),
            "docs_per_second": round(self.candidates / self.seconds, 2) if self.seconds else 0.0,
            "drops": dict(sorted(self.drops.items())), "problems": dict(sorted(self.problems.items())),
            "notes": dict(sorted(self.notes.items())),
        }

    @classmethod
    def from_dict(cls, raw: dict) -> "StageStats":
        return cls(records_read=raw["records_read"], candidates=raw["candidates"],
                   documents_out=raw["documents_out"], bytes_in=raw["bytes_in"], bytes_out=raw["bytes_out"],
                   seconds=raw["seconds"], drops=Counter(raw["drops"]), problems=Counter(raw["problems"]),
                   notes=Counter(raw["notes"]))

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
    dropped_bytes: Counter = field(default_factory=Counter)  # reason -> UTF-8 bytes of the text those documents had
    problems: Counter = field(default_factory=Counter)   # reason -> damaged-input events (logged with offsets)
    notes: Counter = field(default_factory=Counter)      # informational counts (record types, charset sources)

    def drop(self, reason: str, text_bytes: int = 0) -> None:
        """Count one dropped document; `text_bytes` is its text's size where it had text (0 before extraction)."""
        self.drops[reason] += 1
        self.dropped_bytes[reason] += text_bytes

    def merge(self, other: "StageStats") -> "StageStats":
        for name in ("records_read", "candidates", "documents_out", "bytes_in", "bytes_out", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.drops.update(other.drops)
        self.dropped_bytes.update(other.dropped_bytes)
        self.problems.update(other.problems)
        self.notes.update(other.notes)
        return self

    def to_dict(self) -> dict:
        return {
            "records_read": self.records_read, "candidates": self.candidates,
            "documents_out": self.documents_out, "bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
            "seconds": round(self.seconds, 4),
            "docs_per_second": round(self.candidates / self.seconds, 2) if self.seconds else 0.0,
            "drops": dict(sorted(self.drops.items())),
            "dropped_bytes": dict(sorted((reason, size) for reason, size in self.dropped_bytes.items() if size)),
            "problems": dict(sorted(self.problems.items())),
            "notes": dict(sorted(self.notes.items())),
        }

    @classmethod
    def from_dict(cls, raw: dict) -> "StageStats":
        return cls(records_read=raw["records_read"], candidates=raw["candidates"],
                   documents_out=raw["documents_out"], bytes_in=raw["bytes_in"], bytes_out=raw["bytes_out"],
                   seconds=raw["seconds"], drops=Counter(raw["drops"]),
                   dropped_bytes=Counter(raw.get("dropped_bytes", {})), problems=Counter(raw["problems"]),
                   notes=Counter(raw["notes"]))


def orchestration_share(wall_seconds: float, task_seconds: float, task_slots: int) -> float:
    """The share of a stage's wall time not spent in its tasks' own work, had the work been spread evenly over
    `task_slots` (Dask worker threads): (wall - task seconds / slots) / wall, at least 0."""
    return overhead_share(wall_seconds, task_seconds, task_slots, longest_call_seconds=0.0)


def overhead_share(wall_seconds: float, task_seconds: float, task_slots: int, longest_call_seconds: float) -> float:
    """The share of a stage's wall time explained neither by its work spread over `task_slots` nor by its longest
    call, which no number of workers shortens (a stage of one training call): (wall - max(task seconds / slots,
    longest call)) / wall, at least 0. What is left is the flow's own time: scheduling, waiting, reporting."""
    if wall_seconds <= 0 or task_slots <= 0:
        return 0.0
    return round(max(0.0, (wall_seconds - max(task_seconds / task_slots, longest_call_seconds)) / wall_seconds), 4)

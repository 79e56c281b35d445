"""The mixture's two splits by file name: its token shards are `<split>.<NNNNN>` in the stage folder."""
from __future__ import annotations

TRAIN_SPLIT = "train"
VALIDATION_SPLIT = "validation"


def split_bases(bases: list[str], split: str) -> list[str]:
    """The token shard bases (paths without `.bin`/`.idx`) that belong to `split`, in the given order."""
    return [base for base in bases if base.rsplit("/", 1)[-1].startswith(f"{split}.")]

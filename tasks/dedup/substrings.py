"""Substring dedup: word spans of at least `min_words` repeated across distinct documents are cut from all but one
of them (Lee et al. 2021's ExactSubstr, by hashed windows instead of a suffix array).

Every window of `min_words` consecutive words (lower-cased, split on white space) of every document is hashed
(a polynomial rolling hash over 64-bit word hashes) and shuffled by its hash, like the paragraph keys. A reducer
sees all occurrences of a window: among the documents that survive exact, URL and near-duplicate removal, a
window found in at least two distinct texts stays in the text with the smallest text key and is cut from the
others. A repeated span longer than the window is a run of overlapping repeated windows, so it is cut whole.
The owner is chosen by content, so a document's cuts do not depend on its shard or its neighbours.

Why windows and not a suffix array: a suffix array over a bucket of documents finds repeats only within the
bucket, so the buckets would have to be the whole corpus to find them all; hashed windows go through the same
shuffle as every other dedup key and are exact for spans of `min_words` or more, at the cost of a shuffle of
20 bytes per word (docs/stages.md). Like Lee et al., the cut text is simply removed: the words around a cut are
joined.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from storage.arrays import load_array
from storage.parquet import read_table
from tasks.dedup.clusters import removed_path, write_per_part
from tasks.dedup.shuffle import read_bucket
from tasks.dedup.windows import WINDOW_SCHEMA, word_spans

CUT_SCHEMA = pa.schema([("doc", pa.int64()), ("word", pa.int32())])


def repeated_windows(work: str, bucket: int, parts: list[str], buckets: int) -> dict:
    """The reducer: of the windows in `bucket` shared by at least two distinct surviving texts, the occurrences
    outside the owner (the smallest text key), written per document part as (doc, starting word)."""
    rows = read_bucket(f"{work}/windows", bucket, parts, WINDOW_SCHEMA)
    removed = np.concatenate([load_array(removed_path(work, label_bucket)) for label_bucket in range(buckets)])
    rows = rows.filter(pa.array(~np.isin(rows.column("doc").to_numpy(), removed)))
    keys, texts = rows.column("window_key").to_numpy(), rows.column("text_key").to_numpy()
    order = np.lexsort((texts, keys))
    keys, texts = keys[order], texts[order]
    first = np.ones(keys.size, bool)
    first[1:] = keys[1:] != keys[:-1]
    group = np.cumsum(first) - 1
    owner = texts[first][group]                          # the smallest text key of each window
    distinct = np.ones(keys.size, bool)                  # the first row of each (window, text)
    distinct[1:] = first[1:] | (texts[1:] != texts[:-1])
    shared = np.bincount(group, weights=distinct)[group] >= 2
    cut = order[shared & (texts != owner)]
    cuts = pa.table({"doc": rows.column("doc").to_numpy()[cut], "word": rows.column("word").to_numpy()[cut]},
                    schema=CUT_SCHEMA)
    write_per_part(cuts, parts, lambda part: cuts_path(work, part, bucket))
    return {"bucket": bucket, "windows": int(first.sum()), "repeated_windows": int((first & shared).sum()),
            "window_cuts": cuts.num_rows}


def cuts_path(work: str, part: str, bucket: int) -> str:
    return f"{work}/cuts/{part}/b{bucket:05d}.parquet"


def cut_windows(work: str, part: str, buckets: int) -> dict[int, list[int]]:
    """doc -> the starting words of its windows to cut, for one document part."""
    found: dict[int, list[int]] = {}
    for bucket in range(buckets):
        table = read_table(cuts_path(work, part, bucket))
        for doc, word in zip(table.column("doc").to_pylist(), table.column("word").to_pylist()):
            found.setdefault(doc, []).append(word)
    return found


def without_windows(text: str, starts: list[int], min_words: int) -> tuple[str, int, int]:
    """The text without the words of the given windows (windows that overlap or touch make one cut span);
    returns (text, spans cut, characters cut)."""
    spans = word_spans(text)
    runs: list[list[int]] = []                   # [first word, last word] of each cut span
    for start in sorted(starts):
        if runs and start <= runs[-1][1] + 1:
            runs[-1][1] = max(runs[-1][1], start + min_words - 1)
        else:
            runs.append([start, start + min_words - 1])
    ranges = [(spans[first][0], spans[last][1]) for first, last in runs]
    kept, position = [], 0
    for low, high in ranges:
        kept.append(text[position:low])
        position = high
    kept.append(text[position:])
    return "".join(kept), len(ranges), sum(high - low for low, high in ranges)

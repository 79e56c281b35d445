"""`sluice why`: what became of a document in a curation run's document stages, read from their folders.

A document is named by its id or its URL (a URL can name several captures: each is followed). Each stage in
`DOCUMENT_STAGES` that the run has answers in turn: kept (in `shards/`), or dropped (in `removed/`, with the
reason the stage wrote); dedup also names the copy that stays, from its `clusters/` table (the cluster's kept
member, its URL and the dropped copy's similarity to it). Only the `id` and `url` columns are read to find a
document, so a question costs a scan of those columns, not of the texts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from storage.parquet import read_table

DOCUMENT_STAGES = ("extract", "dedup", "quality_filter")


@dataclass
class StageFate:
    stage: str
    kept: bool
    reason: str = ""                                    # why dropped; for a kept duplicate, why it stayed
    details: dict = field(default_factory=dict)         # the stage's own columns for it (dedup: the kept copy)


@dataclass
class DocumentFate:
    id: str
    url: str
    stages: list[StageFate]


def document_fates(key: str, stage_folders: dict[str, str]) -> list[DocumentFate]:
    """The fate of every extracted document whose id or URL is `key`; none if extraction has no such document."""
    extracted = _matching(f"{stage_folders['extract']}/shards", key, ["id", "url"])
    return [DocumentFate(row["id"], row["url"], _stages(row["id"], stage_folders)) for row in extracted]


def _stages(doc_id: str, stage_folders: dict[str, str]) -> list[StageFate]:
    fates = [StageFate("extract", True)]
    for stage in DOCUMENT_STAGES[1:]:
        if stage not in stage_folders:
            continue
        folder = stage_folders[stage]
        removed = _matching(f"{folder}/removed", doc_id, None, by_url=False)
        fate = StageFate(stage, not removed, removed[0]["reason"] if removed else "",
                         {name: value for name, value in removed[0].items() if name not in ("id", "url", "reason")}
                         if removed else {})
        if stage == "dedup":
            _add_cluster(fate, doc_id, folder)
        fates.append(fate)
        if not fate.kept:
            break
    return fates


def _add_cluster(fate: StageFate, doc_id: str, folder: str) -> None:
    """A dedup fate with its cluster: the member that stays and, for a dropped copy, its similarity to it."""
    own = _matching(f"{folder}/clusters", doc_id, None, by_url=False)
    if not own:
        return
    cluster = own[0]["cluster"]
    members = _rows(f"{folder}/clusters", pc.field("cluster") == cluster, None)
    kept = next((row for row in members if row["kept"]), None)
    fate.details = {"cluster": cluster, "cluster_size": own[0]["cluster_size"], "similarity": own[0]["similarity"]}
    if fate.kept:
        fate.reason = own[0]["reason"]
        fate.details["copies_removed"] = sorted(row["id"] for row in members if not row["kept"])
    elif kept is not None:
        fate.details |= {"kept_id": kept["id"], "kept_url": kept["url"]}
    else:       # a URL duplicate whose URL's newest capture is in no cluster: the cluster is named by its id
        fate.details["kept_id"] = cluster


def _matching(folder: str, key: str, columns: list[str] | None, by_url: bool = True) -> list[dict]:
    condition = pc.field("id") == key
    return _rows(folder, condition | (pc.field("url") == key) if by_url else condition, columns)


def _rows(folder: str, condition: pc.Expression, columns: list[str] | None) -> list[dict]:
    fs, path = fsspec.core.url_to_fs(folder)
    found = []
    for name in sorted(fs.glob(f"{path}/*.parquet")):
        table: pa.Table = read_table(fs.unstrip_protocol(name), columns)
        found += table.filter(condition).to_pylist()
    return found


def fate_text(key: str, fates: list[DocumentFate]) -> str:
    if not fates:
        return (f"{key}: no extracted document has this id or URL (not in the input, or its record was skipped: "
                "the extract stage's report counts the skips)")
    lines = []
    for document in fates:
        lines.append(f"{document.id} ({document.url})")
        for fate in document.stages:
            lines.append(f"  {fate.stage}: {'kept' if fate.kept else 'dropped'}"
                         f"{f' ({fate.reason})' if fate.reason else ''}{_details(fate)}")
    return "\n".join(lines)


def _details(fate: StageFate) -> str:
    details = fate.details
    if "kept_id" in details:
        similarity = f", similarity {details['similarity']:.2f}" if details.get("similarity") is not None else ""
        kept = details["kept_id"] + (f" ({details['kept_url']})" if details.get("kept_url") else "")
        return f": the copy kept is {kept}{similarity}"
    if details.get("copies_removed"):
        return f": {len(details['copies_removed'])} copies removed ({', '.join(details['copies_removed'][:5])})"
    shown = {name: value for name, value in details.items() if value not in (None, "")}
    return f": {', '.join(f'{name} {value}' for name, value in shown.items())}" if shown else ""

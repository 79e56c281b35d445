"""Identical payloads -> identical text: extraction makes a document's text from its own record only.

    .venv/bin/python benchmarks/identical_payloads.py [--corpus benchmarks/_work/corpus-bench] \
        [--recipe configs/demo.yaml] [--out benchmarks/results/identical_payloads.json]

Runs the extraction stage's per-shard function (`tasks.extract.shard.extract_shard`, with the recipe's `extract`
config as the flow hands it to its tasks) over every WARC of the corpus, groups the HTML responses that the
pipeline's record reader and `payload_of` take as documents by the SHA-256 of their HTTP payload (the body after
chunked and content-encoding decoding), and counts the groups of >= 2 records whose extracted texts differ
(goal: 0). About a minute on the bench corpus (`sluice corpus --size bench --seed 0`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bare_loop import extract_config_of  # noqa: E402
from benchmarks.harness import write_result  # noqa: E402
from configs.schema import ExtractConfig  # noqa: E402
from storage.document_shard import read_documents  # noqa: E402
from tasks.extract.documents import NotADocument, payload_of  # noqa: E402
from tasks.extract.http_response import parse_http_response  # noqa: E402
from tasks.extract.langid import resolve_model_path  # noqa: E402
from tasks.extract.records import RawRecord, read_records  # noqa: E402
from tasks.extract.shard import ShardJob, extract_shard  # noqa: E402

LOG = logging.getLogger("sluice.bench.identical-payloads")


@dataclass(frozen=True)
class Response:
    warc: str
    record_id: str
    url: str


def html_payloads(warc: Path, config: ExtractConfig) -> dict[str, list[Response]]:
    """SHA-256 of the decoded HTTP body -> the responses of `warc` that extraction takes as HTML documents."""
    groups = defaultdict(list)
    for record in read_records(str(warc), config.max_payload_bytes):
        if not isinstance(record, RawRecord) or record.record_type != "response":
            continue
        try:
            payload_of(record, config.max_payload_bytes)
        except NotADocument:
            continue
        body = parse_http_response(record.block, config.max_payload_bytes).body
        groups[hashlib.sha256(body).hexdigest()].append(Response(warc.name, record.record_id, record.target_uri))
    return groups


def extracted_texts(warc: Path, config: ExtractConfig, lid_model: str, out_dir: str) -> dict[str, str]:
    """WARC-Record-ID -> text of every document the extraction stage writes for `warc`."""
    job = ShardJob(str(warc), f"{out_dir}/{warc.name}.parquet", "bench", lid_model)
    extract_shard(job, config, LOG)
    documents = read_documents(job.output_url, ["warc_record_id", "text"])
    return dict(zip(documents.column("warc_record_id").to_pylist(), documents.column("text").to_pylist()))


def compare(groups: dict[str, list[Response]], texts: dict[str, str]) -> dict:
    """Counts over the groups of >= 2 identical payloads; texts are compared among the members that became
    documents (a member can be dropped on its own, e.g. by the URL filter)."""
    shared = [members for members in groups.values() if len(members) >= 2]
    differing, mixed = [], 0
    for members in shared:
        outcomes = [texts.get(member.record_id) for member in members]
        documents = {text for text in outcomes if text is not None}
        mixed += 0 < sum(text is not None for text in outcomes) < len(outcomes)
        if len(documents) > 1:
            differing.append([member.url for member in members])
    return {"identical_payload_groups": len(shared), "records_in_groups": sum(len(members) for members in shared),
            "groups_across_files": sum(len({member.warc for member in members}) > 1 for members in shared),
            "groups_with_differing_text": len(differing),
            "groups_with_some_members_not_documents": mixed,
            "groups_without_documents": sum(all(member.record_id not in texts for member in members)
                                            for members in shared),
            "differing_examples": differing[:5]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "benchmarks" / "_work" / "corpus-bench")
    parser.add_argument("--recipe", type=Path, default=ROOT / "configs" / "demo.yaml",
                        help="recipe whose extract section is used (default configs/demo.yaml)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "identical_payloads.json")
    args = parser.parse_args(argv)
    warcs = sorted((args.corpus / "warc").glob("*.warc.gz"))
    if not warcs:
        print(f"no WARC files under {args.corpus / 'warc'}", file=sys.stderr)
        return 2
    config, data_dir = extract_config_of(args.recipe)
    lid_model = resolve_model_path(config.langid.model_path, data_dir)
    LOG.setLevel(logging.ERROR)  # the bench corpus' damaged records are expected; their warnings are noise here

    groups: dict[str, list[Response]] = defaultdict(list)
    texts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sluice-identical-payloads-") as out_dir:
        for warc in warcs:
            for digest, members in html_payloads(warc, config).items():
                groups[digest] += members
            texts |= extracted_texts(warc, config, lid_model, out_dir)

    result = {
        "corpus": os.path.relpath(args.corpus, ROOT), "recipe": os.path.relpath(args.recipe, ROOT),
        "warc_files": len(warcs), "html_responses": sum(len(members) for members in groups.values()),
        "documents_extracted": len(texts),
        "goal": "groups_with_differing_text == 0",
    } | compare(groups, texts)
    write_result(args.out, result, "identical_payloads.py", sys.argv[1:] if argv is None else argv)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0 if result["groups_with_differing_text"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Extraction against the generated corpus' ground truth: which records become documents, language-ID
agreement with the page labels, and whether pages with a wrong, missing or lying charset come out readable.

    .venv/bin/python benchmarks/label_agreement.py --corpus benchmarks/_work/corpus-bench \
        --out benchmarks/results/label_agreement.json

"Readable" is strict: the text we extract equals the text extracted from the same HTTP body decoded with
the charset the generator really used (`charset_actual`).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from configs.schema import ExtractConfig  # noqa: E402
from benchmarks.harness import write_result  # noqa: E402
from storage.document_shard import read_documents  # noqa: E402
from storage.locations import shared_data_dir  # noqa: E402
from tasks.extract.html_text import html_to_text  # noqa: E402
from tasks.extract.http_response import parse_http_response  # noqa: E402
from tasks.extract.records import RawRecord, read_records  # noqa: E402
from tasks.extract.shard import ShardJob, extract_shard  # noqa: E402

LOG = logging.getLogger("label-agreement")


def extract_corpus(corpus: Path, config: ExtractConfig, out_dir: Path, lid_model: str) -> dict[str, dict]:
    """Documents by WARC-Record-ID, after running our per-shard extraction over every shard."""
    documents = {}
    for warc in sorted((corpus / "warc").glob("*.warc.gz")):
        job = ShardJob(str(warc), str(out_dir / f"{warc.name}.parquet"), "bench", lid_model)
        extract_shard(job, config, LOG)
        for row in read_documents(job.output_url).to_pylist():
            documents[row["warc_record_id"]] = row
    return documents


def truth_texts(corpus: Path, labels: list[dict], config: ExtractConfig) -> dict[str, str]:
    """Text of each charset-test page decoded with the charset the generator really used."""
    wanted = {label["record_id"]: label for label in labels if label["kind"] == "bad_charset"}
    texts = {}
    for warc in sorted((corpus / "warc").glob("*.warc.gz")):
        for record in read_records(str(warc), config.max_payload_bytes):
            if isinstance(record, RawRecord) and record.record_id in wanted and record.block:
                body = parse_http_response(record.block).body
                actual = wanted[record.record_id]["charset_actual"]
                texts[record.record_id] = html_to_text(body.decode(actual, errors="replace"), config.html)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/label_agreement.json"))
    args = parser.parse_args()
    labels = [json.loads(line) for line in (args.corpus / "labels.jsonl").read_text().splitlines()]
    lid_model = str(shared_data_dir() / "lid" / "lid.176.ftz")
    config = ExtractConfig()
    with tempfile.TemporaryDirectory() as tmp:
        documents = extract_corpus(args.corpus, config, Path(tmp), lid_model)
    truths = truth_texts(args.corpus, labels, config)

    expected = {label["record_id"] for label in labels if label["expect_document"]}
    unexpected = {label["record_id"] for label in labels if not label["expect_document"]}
    kept = set(documents)
    lang_pairs = [(documents[label["record_id"]]["lang"], label["lang"]) for label in labels
                  if label["lang"] and label["record_id"] in documents]
    charset_rows = []
    for label in labels:
        if label["kind"] != "bad_charset":
            continue
        got = documents.get(label["record_id"])
        charset_rows.append({
            "variant": label.get("variant"), "http": label["charset_declared_http"],
            "meta": label["charset_declared_meta"], "actual": label["charset_actual"],
            "invalid_bytes": label.get("invalid_bytes", False),
            "kept": got is not None,
            "readable": got is not None and got["text"].strip() == truths.get(label["record_id"], "").strip(),
        })
    by_variant = Counter((row["variant"], row["readable"]) for row in charset_rows)
    result = {
        "corpus": str(args.corpus), "responses": len(labels),
        "documents": {"expected": len(expected), "kept": len(kept),
                      "kept_and_expected": len(kept & expected),
                      "recall": round(len(kept & expected) / len(expected), 4),
                      "kept_but_not_documents": len(kept & unexpected),
                      "missed_by_kind": dict(Counter(l["kind"] for l in labels
                                                     if l["expect_document"] and l["record_id"] not in kept))},
        "language": {"pairs": len(lang_pairs),
                     "agreement": round(sum(a == b for a, b in lang_pairs) / max(len(lang_pairs), 1), 4),
                     "disagreements": dict(Counter(f"{b}->{a}" for a, b in lang_pairs if a != b).most_common(10))},
        "charset": {"pages": len(charset_rows), "readable": sum(row["readable"] for row in charset_rows),
                    "by_variant": {f"{variant}: {'readable' if ok else 'not readable'}": n
                                   for (variant, ok), n in sorted(by_variant.items(), key=str)}},
    }
    write_result(args.out, result, "label_agreement.py", sys.argv[1:])
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

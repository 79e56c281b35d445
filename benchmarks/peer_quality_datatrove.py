"""The peer side of benchmarks/quality.py, run in the peer venv: datatrove 0.10.1's GopherQuality,
GopherRepetition, C4Quality and FineWebQuality filters at their defaults over the same English documents,
one filter at a time; prints per-filter seconds and writes each document's decision (keep or the reason)."""
from __future__ import annotations

import json
import sys
import time

from datatrove.data import Document
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                        GopherRepetitionFilter)


def main(documents_path: str, decisions_path: str) -> int:
    documents = [json.loads(line) for line in open(documents_path, encoding="utf-8")]
    filters = {"gopher_quality": GopherQualityFilter(), "gopher_repetition": GopherRepetitionFilter(),
               "c4": C4QualityFilter(), "fineweb": FineWebQualityFilter()}
    decisions, seconds = {}, {}
    for name, peer_filter in filters.items():
        started = time.perf_counter()
        outcome = []
        for doc in documents:
            result = peer_filter.filter(Document(text=doc["text"], id=doc["id"]))
            outcome.append("keep" if result is True else result[1])
        seconds[name] = round(time.perf_counter() - started, 3)
        decisions[name] = outcome
    with open(decisions_path, "w") as handle:
        json.dump(decisions, handle)
    print(json.dumps({"documents": len(documents), "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

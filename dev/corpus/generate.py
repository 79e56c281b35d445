"""Generate a seeded Common-Crawl-style WARC corpus with a ground-truth label for every response.

    generate_corpus(out_dir, size="small", seed=0) writes
        out_dir/warc/CC-SLUICE-<seed>-<NNNNN>.warc.gz   the shards
        out_dir/labels.jsonl                            one label per response record
        out_dir/corpus.json                             counts per kind, shard checksums, generator version
and returns the corpus.json content. The same seed writes byte-identical files.
"""
from __future__ import annotations

import json
import os
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from storage.locations import shared_data_dir
from dev.corpus.assemble import assemble, reserve_pages
from dev.corpus.captures import Capture
from dev.corpus.context import BuildContext, HostProfiles, TemplateSupply
from dev.corpus.http_message import request_block, response_block
from dev.corpus.labels import label
from dev.corpus.passages import PassagePool
from dev.corpus.plan import CorpusPlan, plan_for
from dev.corpus.real_records import load_real_responses
from dev.corpus.schedule import CRAWL_START, assign_dates, into_shards
from dev.corpus.sources import load_source_pages
from dev.corpus.urls import UrlRegistry, host_of
from dev.corpus.warc_writer import Fetch, RecordIds, ShardSummary, ShardWriter

# 1.1: no article written into a caption, sidebar, menu, header or footer; 1.2: real near-copies labelled
GENERATOR_VERSION = "1.2"
SHARD_GLOB = "CC-SLUICE-*-*.warc.gz"
FETCH_TIME_MS = (40, 3000)


def generate_corpus(out_dir: Path, size: str = "small", seed: int = 0, data_dir: Path | None = None) -> dict:
    plan = plan_for(size)
    data_dir = Path(data_dir) if data_dir else shared_data_dir()
    out_dir = Path(out_dir)
    rng = random.Random(seed)
    pages = load_source_pages(data_dir)
    reserved = reserve_pages(pages, plan, rng)
    templates = TemplateSupply([p for p in pages if p.source_id not in reserved.used_once],
                               random.Random(f"{seed}:templates"))
    ctx = BuildContext(rng=rng, pool=PassagePool(data_dir, random.Random(f"{seed}:passages")), urls=UrlRegistry(),
                       templates=templates, profiles=HostProfiles(seed), crawl_year=CRAWL_START.year)
    captures, tail = assemble(plan, reserved, load_real_responses(data_dir), ctx)

    schedule_rng = random.Random(f"{seed}:schedule")
    assign_dates(captures, schedule_rng)
    shards = into_shards(captures, plan.shards, schedule_rng)
    tail.date = shards[-1][-1].date + timedelta(seconds=schedule_rng.randint(1, 60))

    labels, shard_summaries = _write_shards(out_dir / "warc", shards, tail, seed, plan, ctx.profiles)
    with (out_dir / "labels.jsonl").open("w", encoding="utf-8") as stream:
        stream.writelines(json.dumps(entry, ensure_ascii=False) + "\n" for entry in labels)
    summary = {
        "generator": "sluice-corpus",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "size": size,
        "crawl": f"CC-SLUICE-{seed}",
        "responses": len(labels),
        "expected_documents": sum(entry["expect_document"] for entry in labels),
        "counts": dict(sorted(Counter(entry["kind"] for entry in labels).items())),
        "shards": [asdict(shard) for shard in shard_summaries],
        "labels": "labels.jsonl",
    }
    (out_dir / "corpus.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _write_shards(warc_dir: Path, shards: list[list[Capture]], tail: Capture, seed: int, plan: CorpusPlan,
                  profiles: HostProfiles) -> tuple[list[dict], list[ShardSummary]]:
    """Write the shards in parallel threads (compression and hashing release the GIL); every shard draws its
    record IDs and fetch times from its own seeded RNG, so the bytes do not depend on the thread schedule."""
    warc_dir.mkdir(parents=True, exist_ok=True)
    for stale in warc_dir.glob(SHARD_GLOB):      # shards of an earlier, larger run would pass for this corpus
        stale.unlink()
    jobs = [[*shard, tail] if index == len(shards) - 1 else shard for index, shard in enumerate(shards)]

    def write(index: int) -> tuple[list[dict], ShardSummary]:
        name = f"CC-SLUICE-{seed}-{index:05d}.warc.gz"
        ids = RecordIds(random.Random(f"{seed}:record-ids:{index}"))
        fetch_times = random.Random(f"{seed}:fetch-times:{index}")
        writer = ShardWriter(warc_dir / name, ids, _warcinfo(seed, plan), CRAWL_START)
        labels = []
        for capture in jobs[index]:
            fetch = _fetch(capture, ids, profiles, fetch_times)
            offset = writer.write_fetch(fetch, cut_response=capture.truncated)
            labels.append(label(capture, name, fetch.response_id, offset))
        return labels, writer.close()

    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        results = list(pool.map(write, range(len(jobs))))
    return [entry for labels, _ in results for entry in labels], [summary for _, summary in results]


def _fetch(capture: Capture, ids: RecordIds, profiles: HostProfiles, rng: random.Random) -> Fetch:
    profile = profiles.of(host_of(capture.url))
    if capture.real:
        response, response_id, ip = capture.real.block, capture.real.record_id, capture.real.ip or profile.ip
    else:
        response = response_block(capture.status, capture.header_content_type, capture.body, capture.date, profile,
                                  capture.last_modified, capture.extra_headers, capture.server)
        response_id, ip = ids.new(), profile.ip
    return Fetch(capture.url, capture.date, ip, request_block(capture.url), response, response_id,
                 capture.identified_payload_type, rng.randint(*FETCH_TIME_MS))


def _warcinfo(seed: int, plan: CorpusPlan) -> dict[str, str]:
    return {
        "isPartOf": f"CC-SLUICE-{seed}",
        "publisher": "sluice corpus generator",
        "description": f"Synthetic {plan.size} crawl built from real pages and real crawl records, with ground truth",
        "software": f"sluice-corpus/{GENERATOR_VERSION}",
        "format": "WARC File Format 1.0",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.0/",
    }

"""Tokenization speed per core, side by side: sluice's tokenize stage (1 Dask worker), a bare single-process
SentencePiece encode loop, and datatrove 0.10.1's DocumentTokenizer with a `tokenizers` BPE of the same
vocabulary trained on the same sample; plus tokenizer training time vs sample size and the mixture's weight
error at the demo's mixture settings. Two workers over one is benchmarks/scale.py's.

    .venv/bin/python benchmarks/tokenization.py      # ~6 min on 2 cores; needs the peer venv (setup_peer.sh)

Input: the extraction output of the seeded bench corpus (cached by benchmarks/dedup.py's extraction step).
Writes benchmarks/results/tokenize.json. Every timed run is a fresh process, one at a time.
- training: `train_tokenizer` (SentencePiece BPE, 32,000 pieces) on 1,000, 2,500 and all documents; the last
  model is the one every run uses, and its sample lines are the peer tokenizer's training text.
- bare loop: read each shard's texts and `SentencePieceProcessor.encode` them (one thread), nothing else.
- stage: the tokenize stage's flow (`flows.stage_runner.stage_flow`) on a Dask LocalCluster of 1 worker; seconds =
  the manifest's `wall_seconds`.
- datatrove: ParquetReader -> DocumentTokenizer (no shuffling), one task per shard, 1 worker.
Per core: each side on one worker; the ratio compares seconds for the same documents (the two tokenizers cut
text into different numbers of tokens, so tokens/s is given for each but not compared).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (PEER_PYTHON, PYTHON, RESULTS, WORK as BENCH_WORK, bench_extraction,  # noqa: E402
                                bench_recipe, ensure_corpus, ensure_peer, log, ratio, run_child, write_result)
from storage.stage_result import stage_folder, stage_shard_urls  # noqa: E402

WORK = BENCH_WORK / "tokenize-bench"
VOCAB = 32000
SAMPLE_SIZES = (1000, 2500, 100_000)
GOALS = {"stage_over_bare_loop": 1.2, "speedup_vs_datatrove_per_core": 1.0, "mixture_max_abs_weight_error": 0.01}


def train_child(args) -> int:
    from configs.tokenizer import TokenizerConfig
    from tasks.tokenize.sample import choose, chosen_documents
    from tasks.tokenize.train import train_tokenizer

    extract = json.loads(args.extract)
    config = TokenizerConfig(vocab_size=VOCAB, sample_documents=args.sample_documents)
    result = train_tokenizer(stage_shard_urls(extract), args.model, config)
    train, _ = choose(stage_shard_urls(extract), config.seed, config.heldout_fraction, config.sample_documents, 0)
    lines = [line for doc in chosen_documents(stage_shard_urls(extract), train, ["text"])
             for line in doc["text"].split("\n") if line.strip()]
    Path(args.model + ".sample.txt").write_text("\n".join(lines), encoding="utf-8")
    print(json.dumps({key: result[key] for key in ("vocab_size", "train_documents", "train_lines", "seconds",
                                                   "heldout")}))
    return 0


def bare_child(args) -> int:
    import sentencepiece as spm

    from storage.document_shard import read_documents

    started = time.perf_counter()
    processor = spm.SentencePieceProcessor(model_file=args.model)
    tokens = documents = text_bytes = 0
    for url in stage_shard_urls(json.loads(args.extract)):
        texts = read_documents(url, ["text"]).column("text").to_pylist()
        tokens += sum(len(ids) + 1 for ids in processor.encode(texts, num_threads=1))   # + EOS, as the stage
        documents += len(texts)
        text_bytes += sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    print(json.dumps({"seconds": round(time.perf_counter() - started, 3), "tokens": tokens,
                      "documents": documents, "text_bytes": text_bytes}))
    return 0


def stage_child(args) -> int:
    from prefect import flow

    from configs.tokenizer import TokenizerConfig
    from flows.dask_cluster import dask_cluster
    from flows.stage_runner import stage_flow
    from tasks.tokenize.stage import TokenizerStage, TokenizeStage

    extract = json.loads(args.extract)
    tokenizer = TokenizerConfig(vocab_size=VOCAB, sample_documents=SAMPLE_SIZES[-1])   # defaults, not the demo's
    shared = bench_recipe(WORK / "tokenizer-store", [args.corpus], 1, "tokenize",
                          {"tokenizer": tokenizer.model_dump(mode="json")})
    fresh = shared.model_copy(update={"store": args.store})

    @flow(name="bench-tokenize")
    def bench() -> dict:
        with dask_cluster(fresh.dask):
            tokenizer = stage_flow(shared, TokenizerStage(shared, extract))
            return stage_flow(fresh, TokenizeStage(extract, tokenizer))

    print(json.dumps(bench()))
    return 0


def mixture_error(stage: dict, extract: dict) -> dict:
    """The demo recipe's mixture (sources, weights, budget) drawn from the bench corpus's token shards."""
    from configs.schema import load_recipe
    from storage.manifest import Manifest
    from tasks.mixture.mix import mix

    pairs = list(zip(stage_shard_urls(stage), [e.source for e in Manifest.load(stage["manifest"]).shards]))
    shutil.rmtree(WORK / "mixture", ignore_errors=True)
    result = mix(pairs, str(WORK / "mixture"), VOCAB, load_recipe(ROOT / "configs" / "demo.yaml").mixture)
    return {key: result[key] for key in ("sources", "train_tokens", "max_abs_weight_error")}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="child")
    for name in ("_train", "_bare", "_stage"):
        child = sub.add_parser(name)
        child.add_argument("--extract", required=True)
        child.add_argument("--model", default="")
        child.add_argument("--sample-documents", type=int, default=0)
        child.add_argument("--store", default="")
        child.add_argument("--corpus", default="")
    parser.add_argument("--corpus", type=Path, help="corpus folder with warc/ (default: the bench corpus)")
    parser.add_argument("--out", type=Path, default=RESULTS / "tokenize.json")
    args = parser.parse_args(argv)
    if args.child:
        return {"_train": train_child, "_bare": bare_child, "_stage": stage_child}[args.child](args)

    corpus, corpus_origin = ensure_corpus(args.corpus)
    ensure_peer()
    extract, _ = bench_extraction(corpus)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    common = ["--extract", json.dumps(extract)]
    training = []
    for size in SAMPLE_SIZES:
        model = str(WORK / f"tokenizer-{size}.model")
        lines, cost = run_child([PYTHON, __file__, "_train", *common, "--model", model,
                                 "--sample-documents", str(size)], f"train tokenizer on {size} documents")
        training.append(lines[-1] | {"process_seconds": cost["process_seconds"]})
    model = str(WORK / f"tokenizer-{SAMPLE_SIZES[-1]}.model")
    bare, bare_cost = run_child([PYTHON, __file__, "_bare", *common, "--model", model], "bare encode loop")
    bare = bare[-1] | bare_cost
    lines, cost = run_child([PYTHON, __file__, "_stage", *common, "--store", str(WORK / "store"), "--corpus",
                             str(corpus / "warc")], "sluice tokenize")
    peer_lines, peer_cost = run_child(
        [PEER_PYTHON, str(ROOT / "benchmarks" / "peer_tokenize_datatrove.py"),
         str(Path(stage_folder(extract), "shards")), "--sample", model + ".sample.txt", "--vocab", str(VOCAB),
         "--work", str(WORK / "datatrove"), "--workers", "1"],
        "datatrove tokenize")
    runs = {"sluice": lines[-1] | cost, "datatrove": peer_lines[-1] | peer_cost}

    ours, peer = runs["sluice"]["stats"], runs["datatrove"]
    seconds = ours["wall_seconds"]
    tokens = ours["notes"]["tokens"]
    result = {
        "corpus": corpus_origin,
        "documents": ours["candidates"], "text_mb": round(ours["bytes_in"] / 1e6, 2), "tokens": tokens,
        "tokens_per_s_per_core": round(tokens / seconds),
        "text_mb_per_s_per_core": round(ours["bytes_in"] / 1e6 / seconds, 3),
        "bare_loop_tokens_per_s": round(bare["tokens"] / bare["seconds"]),
        "stage_over_bare_loop": ratio(seconds, bare["seconds"]),
        "speedup_vs_datatrove_per_core": ratio(peer["seconds"]["tokenize"], seconds),
        "peer_tokens_per_s_per_core": round(peer["tokens"] / peer["seconds"]["tokenize"]),
        "tokenizer_training": [{"sample_documents": t["train_documents"], "lines": t["train_lines"],
                                "seconds": t["seconds"], "vocab_size": t["vocab_size"]} for t in training],
        "peer_tokenizer_training_seconds": peer["seconds"]["train_tokenizer"],
        "heldout": training[-1]["heldout"],
        "mixture": mixture_error(runs["sluice"], extract),
        "goals": GOALS, "bare_loop": bare, "runs": runs,
    }
    result["mixture_max_abs_weight_error"] = result["mixture"]["max_abs_weight_error"]
    write_result(args.out, result, "tokenization.py", argv)
    log(json.dumps({k: v for k, v in result.items() if k not in ("runs", "bare_loop", "heldout")},
                   indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

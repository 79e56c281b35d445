"""Quality stage measurements, side by side with datatrove 0.10.1 where it has a peer:

    .venv/bin/python benchmarks/quality.py      # ~8 min on 2 cores; needs the peer venv (setup_peer.sh)

Input: the English documents (fastText lid) of the seeded bench corpus's extraction output (cached by
benchmarks/dedup.py's extraction step). Writes benchmarks/results/quality.json. Each timed side is its own
process, one at a time, one core.
- agreement: our attributes + default thresholds vs datatrove's GopherQuality, GopherRepetition, C4Quality
  (bad words off on both sides: datatrove's list is a separate filter that downloads it) and FineWebQuality at
  their defaults; share of documents with the same keep/drop decision, and the disagreement classes.
- heuristic speed: seconds for all four families, ours in one pass (words split once) vs the sum of
  datatrove's four filters (how a datatrove pipeline runs them).
- KenLM: the quality_models training on the default reference (all of ../shared/data/reference), Spearman
  correlation with the CCNet perplexities recorded in quality_labelled/ccnet_dolma, scoring docs/s.
- classifier: trained and calibrated as the stage does (reference chunks vs the bench extraction output; Platt
  scaling on one held-out half), evaluated on the other held-out half and on quality_labelled text it never
  trained on: precision and recall at the calibrated probability 0.5 ("more likely high quality than not"),
  reliability (expected calibration error with and without calibration), scoring docs/s.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (PEER_PYTHON, PYTHON, RESULTS, WORK as BENCH_WORK, bench_extraction,  # noqa: E402
                                ensure_corpus, ensure_peer, log, ratio, run_child, write_result)
from storage.stage_result import stage_shard_urls  # noqa: E402

WORK = BENCH_WORK / "quality-bench"
FAMILIES = ("gopher_quality", "gopher_repetition", "c4", "fineweb")
GOALS = {"agreement_per_filter": 0.99, "heuristics_speedup_vs_datatrove_per_core": 2.0}


def write_english_documents(extract: dict, path: Path) -> int:
    from storage.document_shard import read_documents

    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for url in stage_shard_urls(extract):
            for row in read_documents(url, ["id", "text", "lang"]).to_pylist():
                if row["lang"] == "en":
                    handle.write(json.dumps(row) + "\n")
                    count += 1
    return count


def heuristics_child(args) -> int:
    from configs.quality import QualityConfig
    from storage.locations import shared_data_dir
    from tasks.quality.attributes import heuristic_attributes
    from tasks.quality.rules import c4_reason, fineweb_reason, gopher_quality_reason, gopher_repetition_reason

    config = QualityConfig()
    thresholds = config.filter
    c4 = thresholds.c4.model_copy(update={"drop_bad_words": False})
    bad_words = str(shared_data_dir() / "quality_labelled" / "ldnoobw")
    documents = [json.loads(line) for line in open(args.documents, encoding="utf-8")]
    started = time.perf_counter()
    decisions = {family: [] for family in FAMILIES}
    for doc in documents:
        row = {"id": doc["id"], "lang": doc["lang"],
               **heuristic_attributes(doc["text"], doc["lang"], config.c4_lines, bad_words)}
        decisions["gopher_quality"].append(gopher_quality_reason(row, thresholds.gopher_quality) or "keep")
        decisions["gopher_repetition"].append(gopher_repetition_reason(row, thresholds.gopher_repetition) or "keep")
        decisions["c4"].append(c4_reason(row, c4) or "keep")
        decisions["fineweb"].append(fineweb_reason(row, thresholds.fineweb) or "keep")
    seconds = round(time.perf_counter() - started, 3)
    Path(args.decisions).write_text(json.dumps(decisions))
    print(json.dumps({"documents": len(documents), "seconds": seconds}))
    return 0


def kenlm_child(args) -> int:
    from scipy.stats import spearmanr

    from configs.quality import KenlmConfig
    from storage.locations import shared_data_dir
    from tasks.quality.models import train_language_model
    from tasks.quality.perplexity import KenlmModelFiles, PerplexityScorer

    data = shared_data_dir()
    trained = train_language_model("en", [str(data / "reference")], args.work, KenlmConfig())
    scorer = PerplexityScorer(KenlmModelFiles(str(Path(args.work) / trained["sentencepiece"]),
                                              str(Path(args.work) / trained["kenlm"])))
    oracle = [json.loads(line) for path in sorted((data / "quality_labelled" / "ccnet_dolma").glob("multiple_files*"))
              for line in gzip.open(path, "rt")]
    ours = [scorer.perplexity(doc["text"]) for doc in oracle]
    correlation = spearmanr(ours, [doc["metadata"]["perplexity"] for doc in oracle])
    documents = [json.loads(line)["text"] for line in open(args.documents, encoding="utf-8")]
    started = time.perf_counter()
    for text in documents:
        scorer.perplexity(text)
    seconds = time.perf_counter() - started
    # What the oracle can show: the share of the text CCNet scored that the fixture still has, and the range.
    shares = [len(doc["text"]) / doc["metadata"]["length"] for doc in oracle]
    whole = [index for index, share in enumerate(shares) if share >= 0.9]
    whole_correlation = spearmanr([ours[i] for i in whole], [oracle[i]["metadata"]["perplexity"] for i in whole])
    print(json.dumps({"training": trained, "ccnet_documents": len(oracle),
                      "spearman": round(float(correlation.statistic), 4),
                      "spearman_p": round(float(correlation.pvalue), 4),
                      "oracle": {"buckets": dict(Counter(doc["metadata"]["bucket"] for doc in oracle)),
                                 "perplexity_range": [min(doc["metadata"]["perplexity"] for doc in oracle),
                                                      max(doc["metadata"]["perplexity"] for doc in oracle)],
                                 "median_share_of_scored_text_present": round(sorted(shares)[len(shares) // 2], 3),
                                 "documents_with_90pct_of_scored_text": len(whole),
                                 "spearman_on_those": round(float(whole_correlation.statistic), 4)},
                      "pairs": [[a, doc["metadata"]["perplexity"]] for a, doc in zip(ours, oracle)],
                      "scored_documents": len(documents), "seconds": round(seconds, 3),
                      "docs_per_s": round(len(documents) / seconds, 1)}))
    return 0


def classifier_child(args) -> int:
    from configs.quality import ClassifierConfig
    from storage.locations import expand_data_dir
    from tasks.quality.classifier import QualityClassifier
    from tasks.quality.models import train_quality_classifier

    config = ClassifierConfig()
    config = config.model_copy(update={name: [expand_data_dir(path, None) for path in getattr(config, name)]
                                       for name in ("positives", "evaluation_positives", "evaluation_negatives")})
    trained = train_quality_classifier(stage_shard_urls(json.loads(args.extract)), args.work, config,
                                       {"positives": config.evaluation_positives,
                                        "negatives": config.evaluation_negatives})
    classifier = QualityClassifier(str(Path(args.work) / trained["model"]))
    documents = [json.loads(line)["text"] for line in open(args.documents, encoding="utf-8")]
    started = time.perf_counter()
    for text in documents:
        classifier.hq_prob(text)
    seconds = time.perf_counter() - started
    print(json.dumps(trained | {"scored_documents": len(documents), "seconds_scoring": round(seconds, 3),
                                "docs_per_s": round(len(documents) / seconds, 1)}))
    return 0


def stop_word_rule_on_german(extract: dict) -> dict:
    """German pages failing Gopher's stop-word rule (< 2 distinct stop words) with the English list (datatrove's
    default for every document) and with the document's own language's list (ours)."""
    from storage.document_shard import read_documents
    from tasks.quality.gopher import gopher_quality
    from tasks.quality.words import split_words

    failing = Counter()
    pages = 0
    for url in stage_shard_urls(extract):
        for row in read_documents(url, ["text", "lang"]).to_pylist():
            if row["lang"] != "de":
                continue
            pages += 1
            words = split_words(row["text"])
            for lang in ("en", "de"):
                failing[lang] += gopher_quality(row["text"], words, lang)["gopher_stop_words"] < 2
    return {"german_pages": pages, "failing_with_english_list": failing["en"],
            "failing_with_german_list": failing["de"]}


def agreement(ours: dict, peer: dict) -> tuple[dict, dict]:
    shares, classes = {}, {}
    for family in FAMILIES:
        pairs = list(zip(ours[family], peer[family]))
        same = sum((a == "keep") == (b == "keep") for a, b in pairs)
        shares[family] = round(same / len(pairs), 4)
        classes[family] = [{"ours": a, "datatrove": b, "documents": n} for (a, b), n in Counter(
            (a, b) for a, b in pairs if (a == "keep") != (b == "keep")).most_common()]
    return shares, classes


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    children = {"_heuristics": heuristics_child, "_kenlm": kenlm_child, "_classifier": classifier_child}
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("child", nargs="?", choices=sorted(children), help="internal: one timed side")
    parser.add_argument("--documents", help="internal: English documents as JSON lines")
    parser.add_argument("--decisions", default="", help="internal: where a side writes its decisions")
    parser.add_argument("--work", default="", help="internal: model folder")
    parser.add_argument("--extract", default="{}", help="internal: the extraction stage summary")
    parser.add_argument("--corpus", type=Path, help="corpus folder with warc/ (default: the bench corpus)")
    parser.add_argument("--out", type=Path, default=RESULTS / "quality.json")
    args = parser.parse_args(argv)
    if args.child:
        return children[args.child](args)

    corpus, corpus_origin = ensure_corpus(args.corpus)
    ensure_peer()
    extract, _ = bench_extraction(corpus)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    documents = WORK / "english.jsonl"
    english = write_english_documents(extract, documents)
    ours_lines, ours_cost = run_child([PYTHON, __file__, "_heuristics", "--documents", str(documents),
                                         "--decisions", str(WORK / "ours.json")], "sluice heuristics")
    peer_lines, peer_cost = run_child([PEER_PYTHON, str(ROOT / "benchmarks" / "peer_quality_datatrove.py"),
                                         str(documents), str(WORK / "peer.json")], "datatrove filters")
    shares, classes = agreement(json.loads((WORK / "ours.json").read_text()),
                                json.loads((WORK / "peer.json").read_text()))
    kenlm, _ = run_child([PYTHON, __file__, "_kenlm", "--documents", str(documents), "--work", str(WORK / "kenlm")],
                         "KenLM train + score")
    classifier, _ = run_child([PYTHON, __file__, "_classifier", "--documents", str(documents), "--work",
                               str(WORK / "classifier"), "--extract", json.dumps(extract)],
                              "classifier train + score")
    ours, peer, kenlm, classifier = ours_lines[-1], peer_lines[-1], kenlm[-1], classifier[-1]
    peer_seconds = sum(peer["seconds"].values())
    result = {
        "corpus": corpus_origin,
        "english_documents": english,
        "agreement": shares,
        "heuristics_speedup_vs_datatrove_per_core": ratio(peer_seconds, ours["seconds"]),
        "heuristics_docs_per_s": round(english / ours["seconds"], 1),
        "peer_heuristics_docs_per_s": round(english / peer_seconds, 1),
        "peer_seconds_per_filter": peer["seconds"],
        "peer_gopher_repetition_share_of_time": round(peer["seconds"]["gopher_repetition"] / peer_seconds, 3),
        "kenlm_spearman_vs_ccnet": kenlm["spearman"], "kenlm_spearman_p": kenlm["spearman_p"],
        "kenlm_ccnet_oracle": kenlm["oracle"],
        "kenlm_docs_per_s": kenlm["docs_per_s"], "kenlm_training_seconds": kenlm["training"]["seconds"],
        "classifier_auc": classifier["heldout"]["auc"], "classifier_heldout": classifier["heldout"],
        "classifier_calibration": classifier["calibration"],
        "classifier_threshold": classifier["external"]["threshold"],
        "classifier_precision_at_threshold": classifier["external"]["precision"],
        "classifier_recall_at_threshold": classifier["external"]["recall"],
        "classifier_ece_calibrated": {name: classifier[name]["reliability"]["ece"] for name in ("heldout", "external")},
        "classifier_ece_uncalibrated": {name: classifier[name]["reliability_uncalibrated"]["ece"]
                                        for name in ("heldout", "external")},
        "classifier_quality_labelled": classifier["external"], "classifier_docs_per_s": classifier["docs_per_s"],
        "classifier_training_seconds": classifier["seconds"],
        "stop_word_rule_on_german": stop_word_rule_on_german(extract), "disagreements": classes,
        "kenlm_ccnet_pairs": kenlm["pairs"], "goals": GOALS,
        "process_costs": {"ours": ours_cost, "peer": peer_cost},
    }
    write_result(args.out, result, "quality.py", argv)
    log(json.dumps({k: v for k, v in result.items() if k not in ("disagreements", "kenlm_ccnet_pairs",
                                                                 "process_costs")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

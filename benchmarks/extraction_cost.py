"""What the default extraction costs per page against another revision's, side by side on one core.

    .venv/bin/python benchmarks/extraction_cost.py --baseline 42ff058 [--rounds 3]

The baseline revision's files are exported under benchmarks/_work/extraction-baseline. Each round times, in turn
and each in a fresh process, the baseline's `html_to_text(html, HtmlTextConfig())`, this tree's, and this tree's
with `block_selector=False` (main content as it is) on every WCXB page with a gold main text: CPU seconds per page
(time.process_time), after one warm-up page. The ratios are of the medians over rounds. Writes
results/extraction_cost.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

SIDES = {"baseline default": {}, "default": {}, "main content": {"block_selector": False}}


def timed_child(tree: str, settings: dict) -> None:
    """In a fresh process: the ms per page of `tree`'s html_to_text under `settings`, printed as JSON."""
    sys.path.insert(0, tree)       # before any project import, so that every module is the tree's
    from configs.html import HtmlTextConfig
    from dev.wcxb import has_gold, load_wcxb
    from storage.locations import shared_data_dir
    from tasks.extract.html_text import html_to_text

    pages = [page.html for page in load_wcxb(shared_data_dir() / "html" / "wcxb") if has_gold(page)]
    config = HtmlTextConfig(**settings)
    html_to_text(pages[0], config)
    started = time.process_time()
    for html in pages:
        html_to_text(html, config)
    print(json.dumps({"pages": len(pages), "ms_per_page": 1000 * (time.process_time() - started) / len(pages)}))


def main(argv: list[str]) -> int:
    from benchmarks.harness import PYTHON, RESULTS, ROOT, WORK, export_tree, log, run_child, write_result

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="the git revision whose default extraction to time")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "extraction_cost.json")
    args = parser.parse_args(argv)
    baseline_tree, revision = export_tree(args.baseline, WORK / "extraction-baseline")
    trees = {"baseline default": baseline_tree, "default": ROOT, "main content": ROOT}
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    pages = 0
    for round_number in range(args.rounds):
        for side, settings in SIDES.items():
            lines, _ = run_child([PYTHON, __file__, "--child", str(trees[side]), json.dumps(settings)],
                                 f"{side} {round_number + 1}")
            figures = lines[-1]
            pages = figures["pages"]
            times[side].append(round(figures["ms_per_page"], 3))
            log(f"{side}: {figures['ms_per_page']:.2f} ms/page")
    medians = {side: statistics.median(values) for side, values in times.items()}
    baseline = medians["baseline default"]
    write_result(args.out, {
        "baseline_revision": revision,
        "pages": pages, "rounds": args.rounds, "ms_per_page": times, "median_ms_per_page": medians,
        "over_baseline_default": {side: round(value / baseline, 3) for side, value in medians.items()},
        "goal": {"default over baseline default": "<= 1.5"},
    }, "extraction_cost.py", argv)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        timed_child(sys.argv[2], json.loads(sys.argv[3]))
        sys.exit(0)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1:]))

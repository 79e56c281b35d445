"""The tables of benchmarks/README.md that report result files, rendered from those files so that the two cannot
drift apart.

    .venv/bin/python benchmarks/tables.py            # rewrite the README's marked tables from results/*.json
    .venv/bin/python benchmarks/tables.py --check    # exit 1, naming each marked table the files do not give

A generated table stands between the lines `<!-- table: NAME -->` and `<!-- /table -->`, with no blank line around
it (benchmarks/README.md may have at most 300 lines; GitHub ends a table at a comment line). Edit its renderer below,
not the table. The table of result files is prose but for its last column, when, where and at which commit each
file was recorded: that column alone is rendered, the others stay as typed.

Only the standard library: the check runs in the test suite, which must not import `benchmarks`.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
README = BENCH / "README.md"
MARKER = re.compile(r"<!-- table: ([\w-]+) -->")
END_MARKER = "<!-- /table -->"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def markdown_row(cells: list[str]) -> str:
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def markdown_table(header: list[str], rule: str, rows: list[list[str]]) -> list[str]:
    return [markdown_row(header), rule, *(markdown_row(row) for row in rows)]


def side_by_side(values: list[float], spec: str, separator: str = " / ") -> str:
    """Figures side by side as the README writes them: `18.0 / 9.5`."""
    return separator.join(format(value, spec) for value in values)


def span(ordered: list[str], separator: str) -> str:
    """The first and the last of values in order (`0.01-0.02`), or the one value when they all read the same."""
    return ordered[0] if ordered[0] == ordered[-1] else f"{ordered[0]}{separator}{ordered[-1]}"


# ---------------------------------------------------------------------------------------------- the result files

def result_files_table(current: list[str]) -> list[str]:
    """The README's table of result files with its last column rendered from the files it names; every result file
    must have a row."""
    header, rule, *rows = current
    named = {name for row in rows for name in json_files(row)}
    unlisted = sorted({path.name for path in RESULTS.glob("*.json")} - named)
    if unlisted:
        raise ValueError(f"results/ files without a row in the README's table of result files: {unlisted}")
    return [header, rule, *(markdown_row([*row_cells(row)[:-1], "; ".join(map(recorded, json_files(row)))])
                            for row in rows)]


def row_cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def json_files(row: str) -> list[str]:
    """The result files a row's first cell names: `scale.json`, `.png` is scale.json; `ablation.json`, `_x.json`
    would be ablation.json and ablation_x.json (a name opening with _ or . extends the first one's stem)."""
    first, *others = re.findall(r"`([^`]+)`", row_cells(row)[0])
    stem = first.removesuffix(".json")
    names = [first, *(stem + name if name[0] in "_." else name for name in others)]
    return [name for name in names if name.endswith(".json")]


def recorded(name: str) -> str:
    """When, where and at which commit the file says it was recorded: `2026-11-26 17:27, Intel, commit 0baed1c
    (dirty)`."""
    result = load(name)
    where = "unmeasured" if "unmeasured" in result else machine_label(result["machine"])
    dirty = " (dirty)" if result.get("dirty") else ""
    return f"{recorded_when(result)}, {where}, commit {result['commit'][:7]}{dirty}"


def recorded_when(result: dict) -> str:
    """The date the file was written; a file recorded part by part (curation_quality.py) spans its parts' dates."""
    dates = sorted(part["date"] for part in result.get("parts", {}).values()) or [result["date"]]
    return span(dates, " to ").replace("T", " ")


def machine_label(machine: dict | str) -> str:
    """`AMD` or `Intel` for a 2-core machine, `N cores` for a lent one, the GPU's name for a lent GPU. The older files
    wrote the machine as text, and a file of runs made elsewhere says where in its `measured_by` text: the cores are
    read from any of them."""
    if isinstance(machine, dict) and "gpu" in machine:
        return machine["gpu"]
    text = json.dumps(machine)
    found = re.search(r'"cores": (\d+)|(\d+) cores', text)
    cores = int(found[1] or found[2])
    return f"{cores} cores" if cores > 2 else re.search(r"AMD|Intel", text)[0]


# ----------------------------------------------------------------------------------------------- throughput.json

def throughput_table() -> list[str]:
    result = load("throughput.json")
    rows, files = result["rows"], len(result["peer_files"])
    # the rows' names as throughput.py writes them; datatrove ran on `files` of the corpus's files only
    sides = [rows["sluice flow, 1 worker: extract stage"], rows["bare loop: extract_shard, 1 process"],
             rows["raw libraries, 1 process"], rows[f"datatrove, 1 worker, {files} shards"],
             rows[f"datatrove at its fastest (Trafilatura no_fallback, no dedup), 1 worker, {files} shards"]]
    seconds = [format(row["seconds"], ".1f") for row in sides]
    seconds[-2:] = [f"{cell} ({files} files)" for cell in seconds[-2:]]
    rates = [format(row["docs_per_s_per_core"], ".1f") for row in sides]
    return markdown_table(
        ["", "sluice stage", "bare loop", "raw libraries", "datatrove default", "datatrove fastest"],
        "|---|---:|---:|---:|---:|---:|", [["seconds", *seconds], ["HTML docs/s per core", *rates]])


# ---------------------------------------------------------------------------------------------------- scale.json

# scale.py's stages in flow order; quality_models trains on no documents, so it has no rate
SCALE_STAGES = ("extract", "dedup", "quality_scores", "quality_filter", "tokenizer", "tokenize", "mixture")


def scale_table() -> list[str]:
    result = load("scale.json")
    workers, sizes = result["workers"], [f"{size}x" for size in result["sizes"]]
    # each size's unconfined runs on `workers` workers: the smallest size ran again in the scaling pairs, and its
    # figures are over all its runs (its rate their median)
    runs = [[run for run in result["runs"] if run["workers"] == workers and run["size"] == size
             and not run.get("cpus")] for size in result["sizes"]]
    peer = result["peer_extraction"]
    return markdown_table(
        ["stage", f"docs/s per thread {sizes[0]}", *sizes[1:], f"{sizes[-1]} / {sizes[0]}",
         "orchestration share " + " / ".join(sizes), f"{workers}w / 1w"], "|---|---:|---:|---:|---:|---|---|",
        [*(scale_row(stage, runs, result["scaling_2w_over_1w"].get(stage)) for stage in SCALE_STAGES),
         [f"datatrove extract ({len(peer['files'])} files)", *[""] * (len(sizes) + 2),
          f"{peer['scaling_2w_over_1w']:.2f}"]])


def scale_row(stage: str, runs: list[list[dict]], scaling: float | None) -> list[str]:
    """A stage's rate at each size, the largest size's over the smallest's, its orchestration share at each size (the
    range over a size's runs) and its 2-workers-over-1 scaling, where measured; `runs`: each size's runs."""
    figures = [[run["stages"][stage] for run in size_runs] for size_runs in runs]
    rates = [statistics.median(figure["docs_per_s_per_thread"] for figure in size) for size in figures]
    shares = [span([format(share, ".2f") for share in sorted(figure["orchestration_share"] for figure in size)], "-")
              for size in figures]
    return [stage.replace("_", " "), *(format(rate, ",.1f") for rate in rates), f"{rates[-1] / rates[0]:.2f}",
            " / ".join(shares), "" if scaling is None else f"**{scaling:.2f}**"]


# --------------------------------------------------------------------------------------- extraction_quality.json

# the README's configurations -> their rows in the file (every row: results/extraction_quality.md)
EXTRACTION_ROWS = {
    "default: the block selector": "+ block selector (trained on WCXB and the even pages)",
    "main content (block_selector: false)": "+ whole-page fallback when main content < 600 chars (main content)",
    "resiliparse main content alone": "resiliparse main_content (peer)",
    "main content + boilerplate classifier, p > 0.95":
        "main content + drop blocks the boilerplate classifier gives p > 0.95",
    "trafilatura": "trafilatura (include_comments=False)",
}
GOLD_SETS = ("trafilatura_eval", "trafilatura_eval_odd", "readability")


def extraction_quality_table() -> list[str]:
    rows = {row["name"]: row for row in load("extraction_quality.json")["rows"]}
    return markdown_table(["configuration", "trafilatura_eval", "odd pages", "readability", "ms/page"],
                          "|---|---|---|---|---:|",
                          [extraction_row(label, rows[name]) for label, name in EXTRACTION_ROWS.items()])


def extraction_row(label: str, figures: dict) -> list[str]:
    return [label, *(side_by_side([figures[gold]["recall"], figures[gold]["leak"]], ".3f") for gold in GOLD_SETS),
            format(figures["ms_per_page"], ".1f")]


# ---------------------------------------------------------------------------------------------------- dedup.json

DEDUP_RECIPES = ("full", "five_grams", "substring", "minhash")


def dedup_table() -> list[str]:
    result = load("dedup.json")
    runs, ours = result["runs"], [result["by_recipe"][name] for name in DEDUP_RECIPES]
    peer = runs["datatrove"]["quality"]
    precision = [side_by_side([row["precision"], row["precision_on_extracted_text"]], ".3f") for row in ours]
    residual = [f"{row['residual_duplicate_share']:.4f}; {row['recall']:.3f}" for row in [*ours, peer]]
    seconds = [format(runs[f"sluice_{name}"]["stage_seconds"], ".1f") for name in DEDUP_RECIPES]
    peer_seconds = format(runs["datatrove"]["seconds"]["total"], ".1f")
    return markdown_table(
        ["", *DEDUP_RECIPES, "datatrove"], "|---|---:|---:|---:|---:|---:|",
        [["precision (labels) / on the text", *precision, format(peer["precision"], ".3f")],
         ["residual duplicate share; recall (labelled pairs)", *residual],
         ["seconds, 1 worker", *seconds, peer_seconds]])


# ------------------------------------------------------------------------------------------------ ablation*.json

ABLATION_FILES = ("ablation.json", "ablation_sentencepiece_defaults.json", "ablation_fixed_draw.json")
SEED_SETS = {"init": "init", "data_order": "order", "mixture_draw": "draw"}
# (normalization, remove_extra_whitespaces): identity keeps every byte; SentencePiece's defaults do not
TOKENIZERS = {("identity", False): "lossless", ("nmt_nfkc", True): "lossy defaults"}


def ablation_table() -> list[str]:
    return markdown_table(
        ["file", "seeds", "the seed sets", "tokenizer", "difference", "seed std", "snr", "p", "verdict"],
        "|---|---:|---|---|---:|---:|---:|---:|---|", [ablation_row(name) for name in ABLATION_FILES])


def ablation_row(name: str) -> list[str]:
    result = load(name)
    tokenizer = result["tokenizer"]
    # ablation.py's verdict reads "WINNER beats LOSER by ..." when the difference is called
    winner = result["verdict"].split(" beats ")[0] if " beats " in result["verdict"] else None
    return [f"`{name}`", str(result["seeds"]), ", ".join(SEED_SETS[control] for control in result["seed_controls"]),
            TOKENIZERS[tokenizer["normalization"], tokenizer["remove_extra_whitespaces"]],
            f"{result['difference_full_minus_raw_bpb']:.4f}", f"{result['seed_std']:.4f}", f"{result['snr']:.1f}",
            f"{result['p_value']:.3f}", f"{winner} better" if winner else "not called"]


# ----------------------------------------------------------------------------------------- curation_quality.json

CURATION_CHANGES = {
    "1_boilerplate": "boilerplate classifier, p > 0.95 (off by default)",
    "2_residual_duplicates": "MinHash on word bigrams (the default)",
    "3_perplexity": "perplexity filter, tail third dropped (the default)",
}


def curation_quality_table() -> list[str]:
    parts = load("curation_quality.json")["parts"]
    return markdown_table(
        ["part", "change", "bpb before -> after", "difference", "seed std", "p", "documents kept"],
        "|---|---|---|---:|---:|---:|---|", [curation_row(name, parts[name]) for name in sorted(parts)])


def curation_row(name: str, part: dict) -> list[str]:
    kept = [part["documents_out"][part[side]] for side in ("baseline", "variant")]
    return [name.split("_")[0], CURATION_CHANGES[name],
            side_by_side([part["bpb_before"], part["bpb_after"]], ".4f", " -> "), f"{part['difference']:+.4f}",
            f"{part['seed_std']:.4f}", f"{part['p_value']:.2g}", side_by_side(kept, ",", " -> ")]


# ---------------------------------------------------------------------------------------------------- the README

FIGURE_TABLES = {"throughput": throughput_table, "scale": scale_table,
                 "extraction-quality": extraction_quality_table, "dedup": dedup_table, "ablation": ablation_table,
                 "curation-quality": curation_quality_table}


def rendered(name: str, current: list[str]) -> list[str]:
    """A marked table as the result files give it (the table of result files keeps its typed columns)."""
    return result_files_table(current) if name == "result-files" else FIGURE_TABLES[name]()


def marked_tables(lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, first line, line after the last) of each marked table: the lines between its markers."""
    found = []
    for index, line in enumerate(lines):
        if marker := MARKER.fullmatch(line):
            found.append((marker[1], index + 1, lines.index(END_MARKER, index + 1)))
    return found


def refresh(lines: list[str]) -> list[str]:
    """Rewrite the marked tables of `lines` as the result files give them (each change shown on stderr); returns the
    names of those that changed."""
    stale = []
    for name, start, end in reversed(marked_tables(lines)):  # from the last, so a resized table moves none to do
        fresh = rendered(name, lines[start:end])
        if fresh != lines[start:end]:
            stale.insert(0, name)
            print("\n".join(difflib.unified_diff(lines[start:end], fresh, f"{name} (README)", f"{name} (results)",
                                                 lineterm="")), file=sys.stderr)
            lines[start:end] = fresh
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render benchmarks/README.md's marked tables from results/*.json.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each table that differs")
    parser.add_argument("--readme", type=Path, default=README, help="the README to render or check")
    args = parser.parse_args(argv)
    lines = args.readme.read_text(encoding="utf-8").splitlines()
    unmarked = sorted({"result-files", *FIGURE_TABLES} - {name for name, _, _ in marked_tables(lines)})
    if unmarked:
        print(f"{args.readme}: no marker for the tables {unmarked}", file=sys.stderr)
        return 1
    stale = refresh(lines)
    if args.check:
        if stale:
            print(f"{args.readme}: tables not as the result files give them: {', '.join(stale)} "
                  f"(.venv/bin/python benchmarks/tables.py rewrites them)", file=sys.stderr)
        return 1 if stale else 0
    if stale:
        args.readme.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"rewrote {', '.join(stale)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The dedup report charts: S-curve maths against datasketch, deterministic PNGs, example-cluster markdown."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from tasks.dedup.charts import (
    DEFAULT_POINTS,
    cluster_size_histogram_png,
    detection_probability,
    example_clusters_markdown,
    expected_error_rates,
    s_curve_png,
    s_curve_rows,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- S-curve maths ---------------------------------------------------------------------------------------

def test_detection_probability_known_values():
    assert detection_probability(0.8, 14, 8) == pytest.approx(0.9235, abs=1e-4)
    assert detection_probability(0.8, 14, 8) == pytest.approx(1 - (1 - 0.8 ** 8) ** 14)
    assert detection_probability(0.0, 14, 8) == 0.0
    assert detection_probability(1.0, 14, 8) == 1.0
    assert detection_probability(0.5, 1, 1) == pytest.approx(0.5)          # one band of one row: P = j
    assert detection_probability(0.5, 2, 1) == pytest.approx(0.75)


@pytest.mark.parametrize("bands,rows", [(14, 8), (20, 5), (1, 1), (32, 4)])
def test_detection_probability_monotone_in_jaccard(bands, rows):
    ps = [detection_probability(k / 100, bands, rows) for k in range(101)]
    assert all(a <= b for a, b in zip(ps, ps[1:]))
    assert all(0.0 <= p <= 1.0 for p in ps)


def test_more_bands_detect_more_more_rows_detect_less():
    assert detection_probability(0.6, 20, 8) > detection_probability(0.6, 10, 8)
    assert detection_probability(0.6, 14, 10) < detection_probability(0.6, 14, 6)


@pytest.mark.parametrize("bad", [(-0.1, 14, 8), (1.5, 14, 8), (0.5, 0, 8), (0.5, 14, 0), (math.nan, 14, 8)])
def test_detection_probability_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        detection_probability(*bad)


def test_expected_error_rates_match_datasketch():
    from datasketch.lsh import _false_negative_probability, _false_positive_probability

    rates = expected_error_rates(14, 8, 0.8)
    assert set(rates) == {"false_positive", "false_negative", "probability_at_threshold"}
    assert rates["false_positive"] == pytest.approx(_false_positive_probability(0.8, 14, 8))
    assert rates["false_negative"] == pytest.approx(_false_negative_probability(0.8, 14, 8))
    assert rates["probability_at_threshold"] == pytest.approx(detection_probability(0.8, 14, 8))


def test_expected_error_rates_are_sensible_areas():
    t = 0.8
    rates = expected_error_rates(14, 8, t)
    # Each is an area over its interval: within [0, width], and here both small for a well-chosen (b, r).
    assert 0.0 < rates["false_positive"] < t
    assert 0.0 < rates["false_negative"] < 1 - t
    assert rates["false_positive"] + rates["false_negative"] < 0.2
    # Midpoint-rule integrals of the same curve agree.
    n = 4000
    fp = sum(detection_probability((i + 0.5) * t / n, 14, 8) for i in range(n)) * t / n
    fn = sum(1 - detection_probability(t + (i + 0.5) * (1 - t) / n, 14, 8) for i in range(n)) * (1 - t) / n
    assert rates["false_positive"] == pytest.approx(fp, rel=1e-4)
    assert rates["false_negative"] == pytest.approx(fn, rel=1e-3)
    # Raising the threshold moves area from the false-negative side to the false-positive side.
    higher = expected_error_rates(14, 8, 0.9)
    assert higher["false_positive"] > rates["false_positive"]
    assert higher["false_negative"] < rates["false_negative"]


def test_s_curve_rows():
    rows = s_curve_rows(14, 8)
    assert [r["jaccard"] for r in rows] == list(DEFAULT_POINTS)
    assert all(set(r) == {"jaccard", "detection_probability"} for r in rows)
    by_j = {r["jaccard"]: r["detection_probability"] for r in rows}
    assert by_j[0.8] == 0.9235
    assert by_j[1.0] == 1.0
    assert all(r["detection_probability"] == round(r["detection_probability"], 4) for r in rows)
    assert s_curve_rows(1, 1, points=[0.25]) == [{"jaccard": 0.25, "detection_probability": 0.25}]


def test_import_and_error_rates_are_cheap():
    """The report computes the error rates in the flow process, which must not import datasketch or scipy for it."""
    code = ("import sys, tasks.dedup.charts as charts; charts.expected_error_rates(14, 8, 0.8); print(any("
            "m.split('.')[0] in ('matplotlib', 'datasketch', 'scipy', 'prefect', 'mlflow') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- PNGs --------------------------------------------------------------------------------------------------

def test_s_curve_png_written_and_deterministic(tmp_path):
    first = s_curve_png(14, 8, 0.8, tmp_path / "a" / "s_curve.png")
    s_curve_png(14, 8, 0.8, str(tmp_path / "s_curve2.png"))
    assert first == str(tmp_path / "a" / "s_curve.png")
    data = (tmp_path / "a" / "s_curve.png").read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert data == (tmp_path / "s_curve2.png").read_bytes()
    assert b"Software" not in data and b"matplotlib" not in data
    other = (tmp_path / "other.png")
    s_curve_png(20, 5, 0.7, other)
    assert other.read_bytes() != data


def test_png_ignores_global_rcparams(tmp_path):
    import matplotlib

    s_curve_png(14, 8, 0.8, tmp_path / "plain.png")
    with matplotlib.rc_context({"lines.linewidth": 7, "axes.facecolor": "yellow"}):
        s_curve_png(14, 8, 0.8, tmp_path / "styled.png")
    assert (tmp_path / "plain.png").read_bytes() == (tmp_path / "styled.png").read_bytes()


@pytest.mark.parametrize("sizes", [
    [2, 2, 2, 3, 3, 5, 9],
    [2] * 3000 + [3] * 200 + [5, 40],        # counts over three decades: log count axis
    [2, 3, 500, 10_000],                     # wide size range: log-spaced integer bins
    [],
    [1, 0, 1],                               # singletons are not clusters: drawn as empty
], ids=["small", "log-counts", "wide-range", "empty", "singletons"])
def test_cluster_size_histogram_png(tmp_path, sizes):
    a = cluster_size_histogram_png(sizes, tmp_path / "h1.png")
    b = cluster_size_histogram_png(list(sizes), tmp_path / "h2.png")
    assert a == str(tmp_path / "h1.png") and b == str(tmp_path / "h2.png")
    data = (tmp_path / "h1.png").read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert data == (tmp_path / "h2.png").read_bytes()


def test_empty_histogram_equals_singletons_only(tmp_path):
    cluster_size_histogram_png([], tmp_path / "empty.png")
    cluster_size_histogram_png([1, 1], tmp_path / "ones.png")
    cluster_size_histogram_png([2, 3], tmp_path / "some.png")
    assert (tmp_path / "empty.png").read_bytes() == (tmp_path / "ones.png").read_bytes()
    assert (tmp_path / "empty.png").read_bytes() != (tmp_path / "some.png").read_bytes()


# --- example-cluster markdown ------------------------------------------------------------------------------

def _member(i, kept=False, reason="near_dup", text="some text", url=None):
    return {"id": f"doc-{i}", "url": url or f"https://www.example.com/page/{i}", "kept": kept,
            "reason": None if kept else reason, "text": text}


def _table_lines(md):
    return [line for line in md.splitlines() if line.startswith("|")]


def _split_row(line):
    """Split a GFM table row on unescaped pipes (a backslash escapes the next character)."""
    cells, cur, i = [], "", 0
    body = line.strip()[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur.strip())
    return cells


def test_markdown_one_column_per_member():
    cluster = [_member(0, kept=True), _member(1), _member(2, reason="exact_dup")]
    md = example_clusters_markdown([cluster])
    lines = _table_lines(md)
    assert len(lines) == 5                                          # header, separator, id, kept/reason, text
    for line in lines:
        assert len(_split_row(line)) == 1 + len(cluster)            # a label column, then one per member
    header = _split_row(lines[0])
    assert header[1:] == ["example.com/page/0", "example.com/page/1", "example.com/page/2"]
    kept_row = _split_row(lines[3])
    assert kept_row[0] == "kept / reason"
    assert "kept" in kept_row[1] and "near_dup" in kept_row[2] and "exact_dup" in kept_row[3]
    assert "3 documents (1 kept, 2 dropped)" in md


def test_markdown_escapes_pipes_and_newlines():
    nasty = "a | b || c\nsecond line\r\n\n third \\| done"
    md = example_clusters_markdown([[_member(0, kept=True, text=nasty), _member(1, text="plain")]])
    lines = _table_lines(md)
    text_row = _split_row(lines[-1])
    assert len(text_row) == 3                                        # pipes in the text did not add columns
    assert text_row[1] == r"a \| b \|\| c / second line / third \\\| done"
    assert "\n" not in text_row[1]
    for line in lines:
        assert len(_split_row(line)) == 3


def test_markdown_truncates_text_and_limits_members():
    long_text = "x" * 1000
    cluster = [_member(i, kept=(i == 5), text=long_text) for i in range(7)]
    md = example_clusters_markdown([cluster], max_chars=50)
    lines = _table_lines(md)
    assert len(_split_row(lines[0])) == 1 + 4                        # at most 4 members side by side
    assert "3 more members not shown" in md
    text_cells = _split_row(lines[-1])[1:]
    assert all(cell == "x" * 50 + "…" for cell in text_cells)
    assert _split_row(lines[2])[1] == "`doc-5`"                      # the kept member is shown first
    assert "7 documents (1 kept, 6 dropped)" in md


def test_markdown_shortens_urls_and_handles_empty():
    url = "https://www.example.com/" + "segment/" * 30 + "end.html"
    md = example_clusters_markdown([[_member(0, kept=True, url=url), _member(1)]])
    header = _split_row(_table_lines(md)[0])
    assert len(header[1]) <= 48 and header[1].startswith("example.com/") and header[1].endswith("end.html")
    assert "No duplicate clusters" in example_clusters_markdown([])
    two = example_clusters_markdown([[_member(0, kept=True), _member(1)], [_member(2, kept=True), _member(3)]])
    assert "### Cluster 1" in two and "### Cluster 2" in two
    assert len(_table_lines(two)) == 10

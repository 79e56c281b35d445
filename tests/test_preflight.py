"""Bad input is reported before anything starts: `sluice run` on a recipe this machine cannot run exits with status
2 in a few lines naming the field, with no traceback and no Prefect, Dask or MLflow started."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from configs.parsing import RecipeError
from configs.schema import parse_recipe

ROOT = Path(__file__).resolve().parents[1]
WHIRLWIND = "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz"


def _recipe(data_dir: Path, tmp_path: Path, **changes) -> dict:
    recipe = {"name": "preflight", "store": str(tmp_path / "store"),
              "input": {"paths": [str(data_dir / WHIRLWIND)], "source": "preflight"},
              "dedup": {"enabled": False}, "quality": {"enabled": False}, "tokenizer": {"enabled": False},
              "mixture": {"enabled": False}, "mlflow": {"experiment": "preflight"}}
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        target = recipe
        for parent in parents:
            target = target.setdefault(parent, {})
        target[key] = value
    return recipe


def _junk_file(tmp_path: Path) -> str:
    path = tmp_path / "junk" / "page.warc.gz"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(gzip.compress(b"<html>not a WARC record</html>\n" * 20))
    return str(path)


CASES = {
    "missing path": (lambda d, t: {"input__paths": [str(t / "no-such-folder")]},
                     ["input.paths[0]", "does not exist"]),
    "empty glob": (lambda d, t: {"input__paths": [str(t / "*.warc.gz")]}, ["input.paths[0]", "matched no"]),
    "junk file only": (lambda d, t: {"input__paths": [_junk_file(t)]}, ["input.paths[0]", "starts like a WARC"]),
    "data_dir file missing": (lambda d, t: {"quality__enabled": True,
                                            "quality__kenlm__reference": {"en": ["{data_dir}/reference/no-such.txt"]}},
                              ["quality.kenlm.reference.en[0]", "no-such.txt", "does not exist"]),
    "language never kept": (lambda d, t: {"tokenizer__enabled": True, "mixture__enabled": True,
                                          "extract__langid__languages": ["en"],
                                          "mixture__sources": [{"name": "german", "where": {"lang": ["de"]},
                                                                "weight": 1}]},
                            ["mixture.sources[0] ('german').where", "keeps only ['en']"]),
    "unknown column": (lambda d, t: {"tokenizer__enabled": True, "mixture__enabled": True,
                                     "mixture__sources": [{"name": "x", "where": {"language": ["en"]}, "weight": 1}]},
                       ["mixture.sources[0] ('x').where", "'language' is not a document column"]),
    "training that cannot fit": (lambda d, t: {"train": {"enabled": True, "model": {"preset": "1B"},
                                                         "micro_batch_size": 64,
                                                         "hardware": {"device": "h100", "dtype": "bf16"}}},
                                 ["train: planned memory per rank", "exceeds the device's 80 GB"]),
    "training that cannot fit this machine's memory": (
        lambda d, t: {"train": {"enabled": True, "model": {"preset": "124M"}, "micro_batch_size": 4096,
                                "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 2}}},
        ["train: planned memory per rank", "x 2 ranks on one host", "exceeds this machine's"]),
}


@pytest.mark.parametrize("case", CASES)
def test_a_recipe_this_machine_cannot_run_stops_before_anything_starts(case, data_dir, tmp_path):
    changes, expected = CASES[case]
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(_recipe(data_dir, tmp_path, **changes(data_dir, tmp_path))))
    prefect_home = tmp_path / "prefect"
    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(prefect_home)}
    done = subprocess.run([sys.executable, "-m", "cli", "run", str(tmp_path / "recipe.yaml")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert all(text in output for text in expected), output
    assert "Traceback" not in output and len(output.strip().splitlines()) <= 10, output
    assert not prefect_home.exists(), "Prefect was started"        # its temporary server makes PREFECT_HOME


def test_the_demo_recipe_passes_the_checks(data_dir, small_corpus, tmp_path):
    """The checks do not refuse a recipe that runs: the demo's on the small corpus, also with a source selecting by
    a column a stage adds (`kenlm_bucket`, docs/stages.md)."""
    from configs.schema import load_recipe
    from flows.preflight import preflight

    raw = load_recipe(ROOT / "configs" / "demo.yaml").model_dump()
    raw["input"]["paths"] = [str(small_corpus / "warc")]
    preflight(parse_recipe(raw), "configs/demo.yaml")
    raw["mixture"]["sources"].append({"name": "head", "where": {"kenlm_bucket": ["head"]}, "weight": 1})
    preflight(parse_recipe(raw), "configs/demo.yaml")
    raw["quality"]["enabled"] = False
    with pytest.raises(RecipeError, match="'kenlm_bucket' is added by the quality stage, which the recipe turns off"):
        preflight(parse_recipe(raw), "configs/demo.yaml")


@pytest.fixture()
def http_files():
    """A loopback HTTP server: /listing.gz is there, /missing is not (404), /secret is forbidden (403)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Files(BaseHTTPRequestHandler):
        def do_HEAD(self):
            status = {"/listing.gz": 200, "/secret": 403}.get(self.path, 404)
            self.send_response(status)
            self.send_header("Content-Length", "20" if status == 200 else "0")
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_remote_input_is_checked_with_one_request_and_the_reason_told(http_files, data_dir, tmp_path):
    """Reachable, missing (404), forbidden (403) and unreachable (nothing listens) are told apart, at validate."""
    import socket

    from flows.preflight import preflight, remote_problem

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/listing.gz"      # nothing listens once closed
    assert remote_problem(f"{http_files}/listing.gz", {}) is None
    assert "does not exist (HTTP 404)" in remote_problem(f"{http_files}/missing", {})
    assert "is forbidden to this machine (HTTP 403)" in remote_problem(f"{http_files}/secret", {})
    assert "cannot be reached from this machine (ClientConnector" in remote_problem(closed, {})
    recipe = _recipe(data_dir, tmp_path, input={"listing": {"url": f"{http_files}/missing"}, "source": "x"})
    with pytest.raises(RecipeError, match=r"input.listing.url: http://.*/missing does not exist \(HTTP 404\)"):
        preflight(parse_recipe(recipe), "recipe.yaml")

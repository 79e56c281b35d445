"""`sluice server` for real: a Prefect server, an MLflow server, a Dask scheduler with two worker processes and
the deployments process, on free loopback ports. Flow runs are fired by a schedule, triggered and cancelled
through the Prefect API; shutting down leaves no process behind."""
from __future__ import annotations

import gzip
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
SEGMENT = "crawl-data/CC-MAIN-2024-22/segments/1715971057216.39/warc"
SHARDS = 1000
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"     # kept after the run (git-ignored)
TRIGGERED: dict = {}                                       # the triggered run, for the browser test


def _free_ports(count: int) -> list[int]:
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _listing(path: Path, relatives: list[str]) -> str:
    path.write_bytes(gzip.compress(("\n".join(relatives) + "\n").encode()))
    return str(path)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, data_dir, byte_shards, demo_recipe, traced_demo_run) -> dict:
    """A local Common Crawl mirror with two listings, three recipes, the demo recipe over the session's demo store
    (computed already, tracked in the session's MLflow: not the server's) and the deployments file serving them."""
    base = tmp_path_factory.mktemp("server")
    demo = base / "demo" / "configs" / "demo.yaml"          # where the README's snippet looks for it
    demo.parent.mkdir(parents=True)
    demo.write_text(yaml.safe_dump(demo_recipe.model_dump(mode="json") | {"dask": {}}))
    mirror = base / "mirror"
    (mirror / SEGMENT).mkdir(parents=True)
    real = {"whirlwind": data_dir / "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz",
            "chatnoir": data_dir / "warc/commoncrawl/chatnoir-resiliparse/warcfile.warc.gz"}
    for name, path in real.items():
        (mirror / SEGMENT / f"{name}.warc.gz").symlink_to(path)
    crawl = _listing(base / "warc.paths.gz", [f"{SEGMENT}/{name}.warc.gz" for name in real])
    many = []      # 1,000 files, one extraction call each: one real single-page Common Crawl WARC under many names
    for index in range(SHARDS):
        (mirror / SEGMENT / f"page-{index:05d}.warc.gz").symlink_to(real["whirlwind"])
        many.append(f"{SEGMENT}/page-{index:05d}.warc.gz")
    many_listing = _listing(base / "many.paths.gz", many)

    def curation(name: str, listing: str, limit: int | None, dedup: bool) -> str:
        recipe = {"name": name, "store": str(base / "store"),
                  "input": {"listing": {"url": listing, "base_url": str(mirror), "limit": limit}, "source": "cc-test"},
                  "dedup": {"enabled": dedup}, "quality": {"enabled": False}, "tokenizer": {"enabled": False},
                  "mlflow": {"experiment": f"server-{name}"}}
        path = base / f"{name}.yaml"
        path.write_text(yaml.safe_dump(recipe))
        return str(path)

    train = {"name": "server-train", "model": {"preset": "tiny"}, "micro_batch_size": 4, "steps": 100000,
             "data": {"train": byte_shards[:3], "validation": byte_shards[3:]}, "eval": {"every": 10000},
             "checkpoint": {"dir": str(base / "checkpoints"), "every": 10000}, "mlflow": {"experiment": "server-train"},
             "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 2}}
    (base / "train.yaml").write_text(yaml.safe_dump(train))
    deployments = {"deployments": [
        {"name": "tick", "flow": "curation", "recipe": curation("tick", crawl, 1, dedup=True), "interval_s": 10, "tags": ["test"]},
        {"name": "many", "flow": "curation", "recipe": curation("many", many_listing, None, dedup=False)},
        {"name": "train", "flow": "train", "recipe": str(base / "train.yaml")},
        {"name": "demo", "flow": "curation", "recipe": str(demo)},
    ]}
    (base / "deployments.yaml").write_text(yaml.safe_dump(deployments))
    return {"base": base, "deployments": str(base / "deployments.yaml"), "train_config": base / "checkpoints" / "train.yaml",
            "demo_dir": demo.parents[1]}


class Server:
    """The `sluice server` process and a client for the Prefect REST API it serves."""

    def __init__(self, setup: dict, prefect_database):
        self.ports = dict(zip(["prefect", "mlflow", "dask", "dashboard"], _free_ports(4)))
        self.state = setup["base"] / "state"
        self.args = ["--prefect-port", str(self.ports["prefect"]), "--mlflow-port", str(self.ports["mlflow"]),
                     "--dask-port", str(self.ports["dask"]), "--dask-dashboard-port", str(self.ports["dashboard"]),
                     "--dask-workers", "2", "--deployments", setup["deployments"]]
        self.env = os.environ | {"SLUICE_STATE_DIR": str(self.state), "PYTHONPATH": str(ROOT),
                                 # shorter waits than the defaults (10 s, 30 s): the runner's polls, and a run
                                 # held back by the concurrency limit before it asks again
                                 "PREFECT_RUNNER_POLL_FREQUENCY": "1",
                                 "PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS": "4"}
        prefect_database.copy_to(self.state / "server" / "prefect")     # migrated: where `sluice server` keeps it
        self.output = open(setup["base"] / "server.out", "w+")
        self.process = subprocess.Popen([sys.executable, "-m", "cli", "server", *self.args], cwd=ROOT,
                                        env=self.env, stdout=self.output, stderr=subprocess.STDOUT)
        self.api = httpx.Client(base_url=f"http://127.0.0.1:{self.ports['prefect']}/api", timeout=30)
        self.mlflow_url = f"http://127.0.0.1:{self.ports['mlflow']}"

    def printed(self) -> str:
        self.output.flush()
        return Path(self.output.name).read_text()

    def wait_up(self, timeout_s: float = 300) -> None:
        deadline = time.monotonic() + timeout_s
        while "up; Ctrl-C stops everything" not in self.printed():
            assert self.process.poll() is None, self.printed()
            assert time.monotonic() < deadline, self.printed()
            time.sleep(0.5)
        while len(self.deployments()) < 4:          # the deployments process registers them once it is up
            assert time.monotonic() < deadline, self.printed()
            time.sleep(0.5)

    def post(self, path: str, body: dict | None = None):
        # SQLite under a busy server can answer 5xx ("database is locked") or, while it waits on the lock, not
        # within the client's timeout (seen for ~60 s just after a start on 2 busy cores): ask again
        for attempt in range(3):
            try:
                response = self.api.post(path, json=body or {})
            except httpx.TimeoutException:
                if attempt == 2:
                    raise
                continue
            if response.status_code < 500:
                break
            time.sleep(1)
        assert response.is_success, f"POST {path}: {response.status_code} {response.text[:2000]}"
        return response.json() if response.content else None

    def deployments(self) -> dict[str, dict]:
        return {found["name"]: found for found in self.post("/deployments/filter")}

    def run(self, deployment: str, parameters: dict | None = None) -> str:
        body = {"parameters": parameters} if parameters is not None else {}
        return self.post(f"/deployments/{self.deployments()[deployment]['id']}/create_flow_run", body)["id"]

    def flow_run(self, run_id: str) -> dict:
        return self.api.get(f"/flow_runs/{run_id}").json()

    def wait(self, run_id: str, timeout_s: float, states=FINAL) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                found = self.flow_run(run_id)
            except httpx.TimeoutException:   # a busy SQLite server can stall one poll; the deadline still holds
                assert time.monotonic() < deadline, f"no answer about flow run {run_id}"
                continue
            if found["state_type"] in states:
                return found
            assert time.monotonic() < deadline, f"{found['state_type']}: {self.logs(run_id)[-20:]}"
            time.sleep(0.5)

    def logs(self, run_id: str) -> list[str]:
        found = self.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_ASC",
                                           "limit": 200})
        return [entry["message"] for entry in found]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=120)


@pytest.fixture(scope="module")
def server(setup, prefect_database):
    server = Server(setup, prefect_database)
    try:
        server.wait_up()
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


def _completed(server: Server, run_id: str, timeout_s: float) -> dict:
    found = server.wait(run_id, timeout_s)
    assert found["state_type"] == "COMPLETED", server.logs(run_id)[-30:]
    return found


def test_the_server_prints_its_urls_and_serves_typed_deployments(server):
    printed = server.printed()
    for url in (f"Prefect UI:      http://127.0.0.1:{server.ports['prefect']}", f"MLflow UI:       {server.mlflow_url}",
                f"Dask dashboard:  http://127.0.0.1:{server.ports['dashboard']}/status"):
        assert url in printed
    assert httpx.get(f"{server.mlflow_url}/health").status_code == 200
    tick = server.deployments()["tick"]
    assert tick["schedules"][0]["schedule"]["interval"] == 10 and tick["tags"] == ["test"]
    assert tick["global_concurrency_limit"]["limit"] == 1
    schema = tick["parameter_openapi_schema"]
    langid = schema["definitions"]["LangIdConfig"]["properties"]["min_score"]
    assert langid["type"] == "number" and langid["default"] == 0.3 and "language score" in langid["description"]
    recipe = tick["parameters"]["recipe"]
    assert recipe["dask"]["address"] == f"tcp://127.0.0.1:{server.ports['dask']}"     # the external cluster


def test_a_second_server_on_the_same_ports_says_so(server):
    second = subprocess.run([sys.executable, "-m", "cli", "server", *server.args], cwd=ROOT,
                            env=server.env | {"SLUICE_STATE_DIR": str(server.state) + "-second"},
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    assert f"port(s) {server.ports['prefect']}, {server.ports['mlflow']}" in second.stderr
    assert "in use" in second.stderr


def test_an_interval_schedule_fires_by_itself_on_the_external_dask_cluster(server):
    deadline = time.monotonic() + 300
    try:
        while True:
            runs = server.post("/flow_runs/filter", {"flow_runs": {"deployment_id": {
                "any_": [server.deployments()["tick"]["id"]]}, "state": {"type": {"any_": ["COMPLETED"]}}}})
            if [run for run in runs if run["auto_scheduled"]]:
                break
            assert time.monotonic() < deadline, server.printed()
            time.sleep(1)
    finally:        # also when this test fails: a run every 10 s would load the cores for every test after it
        server.post(f"/deployments/{server.deployments()['tick']['id']}/pause_deployment")
    logs = "\n".join(server.logs(runs[0]["id"]))
    assert f"Dask scheduler tcp://127.0.0.1:{server.ports['dask']}" in logs
    assert f"at {server.mlflow_url}" in logs


def test_a_run_with_changed_parameters_logs_to_the_mlflow_server_and_takes_turns_with_another(server):
    """Triggered with a changed recipe, beside a run of the recipe as deployed started at the same moment: the
    deployment's concurrency limit (1) makes one wait its turn (the store is never written twice at once), and the
    changed run is logged to the server's MLflow with its parameters."""
    from mlflow.tracking import MlflowClient

    recipe = server.deployments()["tick"]["parameters"]["recipe"]
    recipe["name"], recipe["mlflow"]["experiment"] = "triggered", "server-triggered"
    recipe["input"]["listing"]["limit"] = 2
    changed, plain = server.run("tick", {"recipe": recipe}), server.run("tick")
    run, other = _completed(server, changed, 480), _completed(server, plain, 480)
    first, second = sorted((run, other), key=lambda found: found["start_time"])
    assert first["end_time"] <= second["start_time"]
    client = MlflowClient(server.mlflow_url)
    experiment = client.get_experiment_by_name("server-triggered")
    (logged,) = client.search_runs([experiment.experiment_id])
    assert logged.data.tags["sluice.recipe"] == "triggered" and logged.info.status == "FINISHED"
    assert logged.data.metrics["extract.candidates"] >= 17      # both real Common Crawl files: 1 + 16 pages
    assert logged.data.params["input.listing.limit"] == "2"
    assert run["parameters"]["recipe"]["input"]["listing"]["limit"] == 2
    assert "recipe.yaml" in [entry.path for entry in client.list_artifacts(logged.info.run_id)]   # served artifacts
    TRIGGERED.update(flow_run=run, mlflow_run=logged)


def test_a_browser_finds_the_runs_artifacts_and_metrics_in_both_uis(server):
    """Headless chromium renders the Prefect flow-run page (its artifacts, and the summary's charts served by the
    MLflow server) and the MLflow run page (metrics, then the artifacts tab); screenshots are kept."""
    from browser import Browser          # tests/browser.py (pytest puts tests/ on the path)

    run, logged = TRIGGERED["flow_run"], TRIGGERED["mlflow_run"]
    prefect_ui, shots = f"http://127.0.0.1:{server.ports['prefect']}", SCREENSHOTS
    browser = Browser()
    try:
        browser.open(f"{prefect_ui}/runs/flow-run/{run['id']}")
        browser.wait_for_text([run["name"], "Completed", "Artifacts"])
        browser.click_text("Artifacts")
        browser.wait_for_text(["triggered-stages", "triggered-summary"])
        browser.screenshot(shots / "prefect-flow-run-artifacts.png")
        (summary,) = [found for found in server.post("/artifacts/filter", {"artifacts": {
            "flow_run_id": {"any_": [run["id"]]}, "key": {"any_": ["triggered-summary"]}}})]
        browser.open(f"{prefect_ui}/artifacts/artifact/{summary['id']}")
        browser.wait_for_text(["MLflow run", "stages/dedup/cluster_sizes.png"])
        deadline = time.monotonic() + 30
        while browser.loaded_images("get-artifact") < 1:             # the chart, fetched from the MLflow server
            assert time.monotonic() < deadline, "the summary's chart did not load"
            time.sleep(0.5)
        browser.screenshot(shots / "prefect-run-summary.png")

        experiment = logged.info.experiment_id
        browser.open(f"{server.mlflow_url}/#/experiments/{experiment}/runs/{logged.info.run_id}")
        documents = int(logged.data.metrics["extract.documents_out"])
        text = browser.wait_for_text(["extract.documents_out", "sluice.recipe", "triggered"])
        assert f"extract.documents_out\n{documents}" in text
        browser.screenshot(shots / "mlflow-run-overview.png")
        browser.open(f"{server.mlflow_url}/#/experiments/{experiment}/runs/{logged.info.run_id}/artifacts")
        browser.wait_for_text(["recipe.yaml", "stages"])
        browser.screenshot(shots / "mlflow-run-artifacts.png")
    finally:
        browser.close()


def test_a_thousand_shards_complete_on_the_external_cluster(server):
    """1,000 WARC shards: extraction is one Prefect task run (the step) whose 1,000 calls run on the external
    cluster, and the step's progress artifact in the UI reaches 100%."""
    run_id = server.run("many")
    _completed(server, run_id, 600)
    subflows = server.post("/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [run_id]}}})
    (step,) = server.post("/task_runs/filter", {"task_runs": {"name": {"any_": ["extract"]}},
                                                "flow_runs": {"id": {"any_": [subflow["id"] for subflow in subflows]}}})
    assert step["state_type"] == "COMPLETED"
    (progress,) = server.post("/artifacts/filter", {"artifacts": {"task_run_id": {"any_": [step["id"]]},
                                                                  "type": {"any_": ["progress"]}}})
    assert progress["description"] == f"extract: {SHARDS} calls"
    assert progress["data"] == 100.0


def _readme_snippet(containing: str) -> str:
    """The README's Python block that holds `containing`, verbatim."""
    (block,) = [block for block in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
                if containing in block]
    return block


def test_the_demo_from_the_cli_the_readme_and_the_ui_completes_in_one_mlflow(server, setup, traced_demo_run):
    """The README's order on one store: `sluice run` of the demo, tracking to this machine's MLflow store as with
    no server up, prints a figure for every stage; the README's Python snippet, verbatim as a script, finds the
    running server's MLflow by itself; then the `demo` deployment, as the UI's Run button starts it. All complete
    on the cached store, and their runs are in one MLflow, the server's. The training was tracked in another store
    (the session's): it is logged again, its metrics copied, not failed."""
    from mlflow.tracking import MlflowClient

    env = {key: value for key, value in server.env.items() if key != "MLFLOW_TRACKING_URI"} | {
        "PREFECT_API_URL": f"http://127.0.0.1:{server.ports['prefect']}/api"}
    cli = subprocess.run([sys.executable, "-m", "cli", "run", "configs/demo.yaml", "--dask-address",
                          f"tcp://127.0.0.1:{server.ports['dask']}"], cwd=setup["demo_dir"], capture_output=True,
                         env=env | {"MLFLOW_TRACKING_URI": f"sqlite:///{server.state / 'mlflow.db'}"}, text=True,
                         timeout=300)
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr[-3000:]
    summary = {line.split(":")[0].strip(): line for line in cli.stdout.splitlines() if re.match(r"^  \w+: ", line)}
    for stage in traced_demo_run[0]["stages"]:
        assert re.search(r": \d+ |: quality models trained", summary[stage]) and "?" not in summary[stage], summary
    assert "tokenizer: 4000 pieces from" in cli.stdout and re.search(r"train: step 20, loss \d", cli.stdout)
    log = Path(cli.stderr.split("full log: ", 1)[1].split(" (-v", 1)[0]).read_text()
    assert "which sqlite:///" in log and "lacks: logged again here as run" in log        # the session's store
    assert f"Dask scheduler tcp://127.0.0.1:{server.ports['dask']}" in cli.stdout

    (setup["demo_dir"] / "run_demo.py").write_text(_readme_snippet("curation_flow"))
    script = subprocess.run([sys.executable, "run_demo.py"], cwd=setup["demo_dir"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert script.returncode == 0, script.stdout[-3000:] + script.stderr[-3000:]
    manifest, script_run, model = script.stdout.strip().splitlines()[-1].split()
    assert manifest.endswith("manifest.json") and model.startswith("models:/")

    deployed = _completed(server, server.run("demo"), 300)
    client = MlflowClient(server.mlflow_url)
    experiment = client.get_experiment_by_name("e2e").experiment_id
    curation = {run.info.run_id: run for run in client.search_runs([experiment], "tags.`sluice.kind` = 'curation'")}
    cli_run = re.search(r"MLflow run:\s+(\w+) \(experiment", cli.stdout)[1]
    assert {cli_run, script_run} <= set(curation) and len(curation) == 3, deployed
    (training,) = client.search_runs([experiment], "tags.`sluice.kind` = 'training'")
    assert training.data.metrics["loss"] == pytest.approx(traced_demo_run[0]["training"]["loss"])


def _trainer_processes(config: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if str(config) in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def test_cancelling_a_training_run_from_the_api_stops_every_rank(server, setup):
    run_id = server.run("train")
    deadline = time.monotonic() + 240
    while len(_trainer_processes(setup["train_config"])) < 3:        # torchrun and its two ranks
        assert time.monotonic() < deadline, server.logs(run_id)[-20:]
        time.sleep(0.5)
    server.post(f"/flow_runs/{run_id}/set_state", {"state": {"type": "CANCELLING"}, "force": True})
    assert server.wait(run_id, 120)["state_type"] == "CANCELLED"
    deadline = time.monotonic() + 60
    while left := _trainer_processes(setup["train_config"]):
        assert time.monotonic() < deadline, [process.info["cmdline"] for process in left]
        time.sleep(0.5)


def test_the_clients_stop_first_then_each_layer_of_services_at_once():
    """The deployments process first (its runs report to Prefect and run on Dask), then the services nothing else
    running needs, together, then the Dask scheduler its workers needed."""
    from services.server import ServerOptions, services, stop_order

    started = services(ServerOptions(dask_workers=2, deployments="configs/deployments.yaml"))
    assert [[service.name for service in layer] for layer in stop_order(started)] == [
        ["deployments"], ["prefect", "mlflow", "dask-worker-0", "dask-worker-1"], ["dask-scheduler"]]


def test_shutting_down_stops_every_process_it_started(server):
    children = psutil.Process(server.process.pid).children(recursive=True)
    started = {int(line.split("pid")[1]) for line in server.printed().splitlines() if " pid " in line}
    groups = {child.pid for child in children} | started
    assert len(started) == 6                                   # prefect, mlflow, scheduler, 2 workers, deployments
    assert server.stop() == 0
    time.sleep(1)
    alive = [pid for pid in groups if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, alive
    assert "stopped; stopping" in server.printed()

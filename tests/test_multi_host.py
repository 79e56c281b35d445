"""Multi-host mode: `sluice secrets` makes a CA, the Dask and web certificates and the credentials; `sluice server`
refuses to listen beyond loopback without --multi-host; with it, on loopback here, Prefect and MLflow serve HTTPS
only (a client without the cluster's CA, or speaking plain HTTP, is refused), each service refuses a client without
credentials (Prefect's API and MLflow answer 401, Dask's scheduler drops plain TCP and TLS without a certificate of
the cluster's CA), and `sluice run` with the credentials completes: its flow run recorded by the authenticated
Prefect API, its MLflow run logged, its stage computed on the Dask cluster over TLS. The compose override is
checked against the same settings."""
from __future__ import annotations

import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from services.cluster_secrets import (CA_CERT, CREDENTIALS, NODE_CERT, NODE_KEY, WEB_CERT, WEB_KEY, certificate_names,
                                     make_cluster_secrets)
from flows.dask_tls import NODE_ENV, REQUIRE_ENCRYPTION_ENV, SCHEDULER_ENV, client_tls_problems, tls_env
from services.multi_host import (CA_FILE_ENVS, Credentials, https_client_env, mlflow_auth_config,
                                 web_certificate_problems)
from services.server import ServerOptions, services
from flows.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
WARC = "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz"


def _sluice(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env or os.environ.copy(),
                          capture_output=True, text=True, timeout=timeout)


def _loaded(env_file: Path) -> dict[str, str]:
    """The variables a shell gets from the file, loaded the way the docs say (set -a; . FILE)."""
    shown = subprocess.run(["bash", "-c", f"set -a; . '{env_file}'; env -0"], env={}, capture_output=True,
                           check=True).stdout.decode()
    return dict(entry.split("=", 1) for entry in shown.split("\0") if "=" in entry)


def test_secrets_make_certificates_of_one_ca_keys_only_their_owner_reads_and_nothing_is_overwritten(tmp_path):
    from cryptography import x509

    folder = tmp_path / "secrets"
    made = _sluice("secrets", str(folder), "--days", "30", "--host", "10.0.0.5", "--host", "mlflow")
    assert made.returncode == 0, made.stderr
    assert f"{WEB_CERT}, Prefect's and MLflow's, is valid for 10.0.0.5, mlflow, localhost, 127.0.0.1" in made.stdout
    ca = x509.load_pem_x509_certificate((folder / CA_CERT).read_bytes())
    for name in ("scheduler.pem", NODE_CERT, WEB_CERT):
        x509.load_pem_x509_certificate((folder / name).read_bytes()).verify_directly_issued_by(ca)
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(folder / CA_CERT))
    context.load_cert_chain(folder / NODE_CERT, folder / NODE_KEY)           # a key that matches its certificate
    context.load_cert_chain(folder / WEB_CERT, folder / WEB_KEY)
    for name in ("ca-key.pem", "scheduler-key.pem", NODE_KEY, WEB_KEY, CREDENTIALS):
        assert (folder / name).stat().st_mode & 0o077 == 0, name
    assert certificate_names(folder / WEB_CERT) == ["10.0.0.5", "mlflow", "localhost", "127.0.0.1"]
    assert web_certificate_problems(folder, "10.0.0.5") == []
    (problem,) = web_certificate_problems(folder, "10.0.0.6")
    assert "is valid for 10.0.0.5, mlflow, localhost, 127.0.0.1, not 10.0.0.6" in problem
    assert "sluice secrets DIR --host 10.0.0.6" in problem
    credentials = _loaded(folder / CREDENTIALS)
    assert len(credentials["PREFECT_API_AUTH_STRING"]) >= 40 and len(credentials["MLFLOW_TRACKING_PASSWORD"]) >= 12
    again = _sluice("secrets", str(folder))
    assert again.returncode == 2 and "already holds" in again.stderr and "--force" in again.stderr
    assert _loaded(folder / CREDENTIALS) == credentials
    replaced = _sluice("secrets", str(folder), "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert _loaded(folder / CREDENTIALS)["MLFLOW_TRACKING_PASSWORD"] != credentials["MLFLOW_TRACKING_PASSWORD"]
    assert (folder / WEB_KEY).stat().st_mode & 0o077 == 0 and certificate_names(folder / WEB_CERT)[0] == "localhost"


def test_the_server_refuses_to_listen_beyond_loopback_without_multi_host_or_without_credentials(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("PREFECT_API_AUTH_STRING", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")}
    open_to_all = _sluice("server", "--host", "0.0.0.0", env=env)
    assert open_to_all.returncode == 2
    assert "--host 0.0.0.0 listens beyond this machine" in open_to_all.stderr and "--multi-host" in open_to_all.stderr
    bare = _sluice("server", "--multi-host", "--dask-workers", "1", env=env | {"MLFLOW_TRACKING_PASSWORD": "short"})
    assert bare.returncode == 2
    for line in ("PREFECT_API_AUTH_STRING is not set", "MLFLOW_TRACKING_USERNAME is not set",
                 "MLFLOW_TRACKING_PASSWORD has 5 characters", "multi-host mode needs --certs DIR"):
        assert line in bare.stderr


def test_a_tls_scheduler_without_this_machines_certificates_is_refused_before_the_run(tmp_path):
    import dask

    assert client_tls_problems("tcp://10.0.0.5:8786", "dask.address") == []
    with dask.config.set({"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}):
        (problem,) = client_tls_problems("tls://10.0.0.5:8786", "dask.address")
    assert "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT" in problem
    with dask.config.set({"distributed.comm.tls.ca-file": str(tmp_path / "ca.pem"),
                          "distributed.comm.tls.client.cert": str(tmp_path),
                          "distributed.comm.tls.client.key": str(tmp_path)}):
        (problem,) = client_tls_problems("tls://10.0.0.5:8786", "dask.address")
    assert f"{tmp_path / 'ca.pem'}, which does not exist" in problem


def test_the_compose_override_sets_what_sluice_server_sets():
    base = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())["services"]
    override = yaml.safe_load((ROOT / "docker/compose.multihost.yaml").read_text())["services"]
    secrets = tls_env(Path("/secrets"), scheduler=True)
    node = {key: secrets[key] for key in ["DASK_DISTRIBUTED__COMM__TLS__CA_FILE", *NODE_ENV]}
    assert override["dask-scheduler"]["environment"] == secrets | REQUIRE_ENCRYPTION_ENV
    assert set(SCHEDULER_ENV) < set(secrets)
    for name in ("dask-worker", "deployments", "sluice"):
        assert node.items() <= override[name]["environment"].items(), name
        assert {"PREFECT_API_AUTH_STRING", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"} <= set(
            override[name]["environment"]), name
    assert override["dask-worker"]["environment"]["DASK_SCHEDULER_ADDRESS"] == "tls://dask-scheduler:8786"
    assert base["dask-worker"]["environment"]["DASK_SCHEDULER_ADDRESS"] == "tcp://dask-scheduler:8786"
    assert override["deployments"]["environment"]["SLUICE_DASK_ADDRESS"] == "tls://dask-scheduler:8786"
    mlflow = override["mlflow"]["entrypoint"]
    # the base command up to --allowed-hosts, then the basic-auth app
    assert mlflow[:len(base["mlflow"]["entrypoint"]) - 2] == base["mlflow"]["entrypoint"][:-2]
    assert mlflow[mlflow.index("--app-name") + 1] == "basic-auth"
    assert (ROOT / "docker/mlflow-auth.ini").read_text() == mlflow_auth_config(Path("/app/.state"))
    assert "PREFECT_SERVER_API_AUTH_STRING" in override["prefect"]["environment"]
    # HTTPS as sluice server serves it, with the web certificate of the secrets folder
    served = {service.name: service for service in services(ServerOptions(
        host="0.0.0.0", prefect_port=4200, mlflow_port=5000, multi_host=True, certs=Path("/secrets"), deployments=None),
        Credentials("auth", "admin", "password"))}
    prefect = served["prefect"].command
    assert override["prefect"]["entrypoint"] == ["python", *prefect[prefect.index("-m"):]]
    assert mlflow[mlflow.index("--uvicorn-opts"):] == served["mlflow"].command[-2:]
    assert override["prefect"]["environment"]["PREFECT__SERVER_FINAL"] == served["prefect"].env["PREFECT__SERVER_FINAL"]
    for name in ("dask-worker", "deployments", "sluice"):
        assert https_client_env(Path("/secrets")).items() <= override[name]["environment"].items(), name
        assert override[name]["environment"]["PREFECT_API_URL"] == "https://prefect:4200/api"
        assert override[name]["environment"]["MLFLOW_TRACKING_URI"] == "https://mlflow:5000"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, data_dir, prefect_database):
    """`sluice server --multi-host` on loopback with one Dask worker, the credentials and certificates of a fresh
    `sluice secrets` folder; and another cluster's, for a certificate this one must refuse."""
    base = tmp_path_factory.mktemp("multi-host")
    make_cluster_secrets(base / "secrets")
    make_cluster_secrets(base / "foreign")
    credentials = _loaded(base / "secrets" / CREDENTIALS)
    ports = {name: free_port() for name in ("prefect", "mlflow", "dask", "dashboard")}
    env = os.environ | credentials | {"SLUICE_STATE_DIR": str(base / "state"), "PYTHONPATH": str(ROOT)}
    prefect_database.copy_to(base / "state" / "server" / "prefect")      # migrated: where `sluice server` keeps it
    output = open(base / "server.out", "w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "server", "--multi-host", "--host", "127.0.0.1", "--certs",
         str(base / "secrets"), "--dask-workers", "1", "--deployments", "", "--prefect-port", str(ports["prefect"]),
         "--mlflow-port", str(ports["mlflow"]), "--dask-port", str(ports["dask"]), "--dask-dashboard-port",
         str(ports["dashboard"])], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    found = {"base": base, "ports": ports, "credentials": credentials, "process": process,
             "printed": lambda: Path(output.name).read_text(), "env": env, "data_dir": data_dir}
    try:
        deadline = time.monotonic() + 240
        while "up; Ctrl-C stops everything" not in found["printed"]():
            assert process.poll() is None and time.monotonic() < deadline, found["printed"]()
            time.sleep(0.5)
        yield found
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=120) == 0, found["printed"]()


@pytest.mark.slow
def test_the_printout_says_what_a_client_sets_and_prints_no_secret(cluster):
    printed = cluster["printed"]()
    assert f"Dask scheduler:  tls://127.0.0.1:{cluster['ports']['dask']}" in printed
    assert f"export PREFECT_API_URL=https://127.0.0.1:{cluster['ports']['prefect']}/api" in printed
    assert f"export MLFLOW_TRACKING_URI=https://127.0.0.1:{cluster['ports']['mlflow']}" in printed
    for variable in (*CA_FILE_ENVS, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE"):
        assert f"export {variable}={cluster['base'] / 'secrets' / CA_CERT}" in printed
    for secret in ("PREFECT_API_AUTH_STRING", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_FLASK_SERVER_SECRET_KEY"):
        assert cluster["credentials"][secret] not in printed


def _prefect_auth(cluster) -> dict[str, str]:
    """Prefect's clients send the auth string as the whole basic-auth token."""
    token = base64.b64encode(cluster["credentials"]["PREFECT_API_AUTH_STRING"].encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _https(cluster) -> httpx.Client:
    """A client that trusts the cluster's CA."""
    return httpx.Client(verify=ssl.create_default_context(cafile=str(cluster["base"] / "secrets" / CA_CERT)))


@pytest.mark.slow
def test_prefect_and_mlflow_serve_only_https_to_clients_of_the_ca_and_answer_401_without_credentials(cluster):
    prefect = f"https://127.0.0.1:{cluster['ports']['prefect']}/api/flows/filter"
    mlflow = f"https://127.0.0.1:{cluster['ports']['mlflow']}"
    searched = f"{mlflow}/api/2.0/mlflow/experiments/search?max_results=1"
    for url in (prefect, searched):
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):    # a client without the CA
            httpx.post(url, json={}, headers=_prefect_auth(cluster))
        with pytest.raises(httpx.TransportError):                                   # plain HTTP: no answer
            httpx.post(url.replace("https://", "http://"), json={}, headers=_prefect_auth(cluster))
    client = _https(cluster)
    assert client.post(prefect, json={}).status_code == 401
    assert client.post(prefect, json={}, auth=("wrong", "guess")).status_code == 401
    assert client.post(prefect, json={}, headers=_prefect_auth(cluster)).status_code == 200
    for path in ("/api/2.0/mlflow/experiments/search?max_results=1", "/ajax-api/2.0/mlflow-artifacts/artifacts",
                 "/get-artifact?path=recipe.yaml&run_uuid=0"):
        assert client.get(mlflow + path).status_code == 401, path
    login = (cluster["credentials"]["MLFLOW_TRACKING_USERNAME"], cluster["credentials"]["MLFLOW_TRACKING_PASSWORD"])
    assert client.get(searched, auth=(login[0], "x" * 16)).status_code == 401
    assert client.get(searched, auth=login).status_code == 200


def _refusal(port: int, certs: Path | None, ca: Path) -> str:
    """Why the scheduler dropped a TLS connection that trusts its `ca` and shows the node certificate of `certs`
    (None: no certificate); '' if it did not."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    if certs:
        context.load_cert_chain(certs / NODE_CERT, certs / NODE_KEY)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw) as tls:
            tls.sendall(b"\0" * 8)
            tls.recv(1)        # TLS 1.3: the server's verdict on our certificate arrives after the handshake
    except (ssl.SSLError, ConnectionError) as error:
        # the server's alert, or its closed connection when the alert lost the race (UNEXPECTED_EOF)
        assert "CERTIFICATE_VERIFY_FAILED" not in str(error)      # not this side refusing the scheduler
        return str(error)
    return ""


@pytest.mark.slow
def test_the_dask_scheduler_admits_only_certificates_of_its_ca(cluster):
    from distributed import Client
    from distributed.security import Security

    port, secrets = cluster["ports"]["dask"], cluster["base"] / "secrets"
    with pytest.raises(OSError):                      # plain TCP: the scheduler closes the connection
        Client(f"tcp://127.0.0.1:{port}", timeout=5)
    assert _refusal(port, None, secrets / CA_CERT)
    assert _refusal(port, cluster["base"] / "foreign", secrets / CA_CERT)          # another cluster's certificate
    security = Security(tls_ca_file=str(secrets / CA_CERT), tls_client_cert=str(secrets / NODE_CERT),
                        tls_client_key=str(secrets / NODE_KEY), require_encryption=True)
    with Client(f"tls://127.0.0.1:{port}", security=security, timeout=30) as client:
        assert client.submit(sum, [1, 2, 3]).result() == 6
        ((address, worker),) = client.scheduler_info()["workers"].items()
    assert worker["id"] == "sluice-0" and address.startswith("tls://127.0.0.1:")      # workers listen on TLS too
    assert worker["nanny"].startswith("tls://127.0.0.1:")


@pytest.mark.slow
def test_sluice_run_with_the_credentials_completes_on_every_service(cluster, tmp_path):
    ports, secrets = cluster["ports"], cluster["base"] / "secrets"
    recipe = {"name": "tiny-tls", "store": str(tmp_path / "store"),
              "input": {"paths": [str(cluster["data_dir"] / WARC)], "source": "cc-test"},
              "dedup": {"enabled": False}, "quality": {"enabled": False}, "tokenizer": {"enabled": False},
              "mlflow": {"experiment": "multi-host"}}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    client = cluster["env"] | {"PREFECT_API_URL": f"https://127.0.0.1:{ports['prefect']}/api",
                               "MLFLOW_TRACKING_URI": f"https://127.0.0.1:{ports['mlflow']}",
                               "SLUICE_STATE_DIR": str(tmp_path / "client")}
    client |= tls_env(secrets) | https_client_env(secrets)
    done = _sluice("run", str(tmp_path / "recipe.yaml"), "--dask-address", f"tls://127.0.0.1:{ports['dask']}",
                   env=client, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"Dask scheduler tls://127.0.0.1:{ports['dask']} ran the stages" in done.stdout
    assert "extract: 1 documents" in done.stdout

    mlflow = _https(cluster)
    mlflow.base_url = f"https://127.0.0.1:{ports['mlflow']}/api/2.0/mlflow"
    mlflow.auth = (cluster["credentials"]["MLFLOW_TRACKING_USERNAME"],
                   cluster["credentials"]["MLFLOW_TRACKING_PASSWORD"])
    experiment = mlflow.get("/experiments/get-by-name", params={"experiment_name": "multi-host"}).json()["experiment"]
    (run,) = mlflow.post("/runs/search", json={"experiment_ids": [experiment["experiment_id"]]}).json()["runs"]
    assert run["info"]["status"] == "FINISHED"
    assert {"key": "extract.documents_out", "value": 1.0} in [
        {"key": metric["key"], "value": metric["value"]} for metric in run["data"]["metrics"]]

    prefect = _https(cluster)
    prefect.base_url, prefect.headers = f"https://127.0.0.1:{ports['prefect']}/api", _prefect_auth(cluster)
    (flow_run,) = prefect.post("/flow_runs/filter", json={"flows": {"name": {"any_": ["sluice-curation"]}}}).json()
    assert flow_run["state_type"] == "COMPLETED" and flow_run["parameters"]["recipe"]["name"] == "tiny-tls"

    # no secret in anything the run and the services wrote: the console, the logs, the run's MLflow params and tags,
    # the flow run's parameters and logs, the stored recipe and every file of the client's and the server's state
    logs = prefect.post("/logs/filter", json={"logs": {"flow_run_id": {"any_": [flow_run["id"]]}}}).json()
    written = [done.stdout, done.stderr, json.dumps(run), json.dumps(flow_run), json.dumps(logs)]
    for folder in (tmp_path, cluster["base"] / "state"):
        written += [path.read_bytes().decode("latin-1") for path in folder.rglob("*") if path.is_file()]
    for name in ("PREFECT_API_AUTH_STRING", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_FLASK_SERVER_SECRET_KEY"):
        assert not [text[:200] for text in written if cluster["credentials"][name] in text], name
    assert (cluster["base"] / "state" / "server").stat().st_mode & 0o077 == 0      # the server's databases and logs

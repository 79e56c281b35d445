"""`sluice server`: the long-running services, each a child process in its own process group.

- a Prefect server (SQLite under the state dir, or PREFECT_API_DATABASE_CONNECTION_URL, e.g. Postgres);
- an MLflow tracking server (SQLite backend and a served artifact store under the state dir, or
  `--backend-store-uri`);
- optionally a Dask scheduler and N `dask worker` processes that reach the Prefect API through PREFECT_API_URL;
- the deployments process (`flows/deployments.py`) serving `configs/deployments.yaml` against that Prefect
  server, its flow runs logging to the MLflow server and computing on the Dask cluster.

On loopback only, unless `--multi-host` (services/multi_host.py): then Prefect asks for its auth string, MLflow for
basic-auth credentials and Dask for TLS certificates, Prefect and MLflow serve HTTPS, and the dashboards stay on
loopback.

Every port is checked before anything starts (a second server on busy ports stops with the port named); each
service starts once the services it needs answer their health checks: Prefect, MLflow, the Dask scheduler and the
deployments process at once (the deployments process waits for Prefect's API after its imports), the workers after
the scheduler. Fresh, on 2 cores, the deployments are served ~48 s after the command instead of ~67 s with each
service started after the one before. Ctrl-C or SIGTERM, or any service dying, stops everything started, process
group by process group (SIGTERM, then SIGKILL after a grace period), in the layers of `stop_order`.
"""
from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flows.dask_tls import REQUIRE_ENCRYPTION_ENV, tls_env
from flows.processes import kill_process_groups
from services.cluster_secrets import CA_CERT, WEB_CERT, WEB_KEY
from services.multi_host import (MLFLOW_AUTH_CONFIG, Credentials, client_instructions, credentials_from_environment,
                                 host_problems, https_client_env, mlflow_auth_config, mlflow_login_refused,
                                 web_certificate_problems)
from storage.locations import state_dir
from tracking.store import SERVER_RECORD, local_artifact_root, local_tracking_uri

ROOT = Path(__file__).resolve().parents[1]


class ServerError(RuntimeError):
    """A service could not start: a busy port, a failed health check, a process that exited."""


@dataclass
class Service:
    name: str
    command: list[str]
    health_url: str | None = None          # None: up once started (dask workers, the deployments process)
    env: dict[str, str] = field(default_factory=dict)
    login: tuple[str, str] | None = None   # basic-auth credentials the health check is made with
    ca_file: Path | None = None            # the CA an HTTPS health check verifies the server with
    refused: str = ""                      # what to say when they are refused
    needs: tuple[str, ...] = ()            # the services that must answer before this one starts
    process: subprocess.Popen | None = None
    deadline: float = 0.0                  # when its health check gives up (monotonic clock)


@dataclass(frozen=True)
class ServerOptions:
    host: str = "127.0.0.1"
    prefect_port: int = 4200
    mlflow_port: int = 5000
    dask_workers: int = 0
    dask_port: int = 8786
    dask_dashboard_port: int = 8787
    deployments: str | None = "configs/deployments.yaml"
    backend_store_uri: str | None = None
    state: Path = Path(".state/server")
    multi_host: bool = False
    certs: Path | None = None              # the TLS certificates (`sluice secrets`), with --multi-host

    @property
    def scheme(self) -> str:
        return "https" if self.multi_host else "http"

    @property
    def prefect_api_url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.prefect_port}/api"

    @property
    def mlflow_url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.mlflow_port}"

    @property
    def dask_address(self) -> str:
        return f"{'tls' if self.multi_host else 'tcp'}://{self.host}:{self.dask_port}"

    @property
    def dashboard_host(self) -> str:
        """The Dask dashboards have no authentication: this machine only, in multi-host mode."""
        return "127.0.0.1" if self.multi_host else self.host


def checked_credentials(options: ServerOptions) -> Credentials | None:
    """The credentials the services will ask for (None on loopback); ServerError if the options would let anyone
    in, or lack what multi-host mode needs."""
    problems = host_problems(options.host, options.multi_host)
    credentials = None
    if options.multi_host:
        credentials, missing = credentials_from_environment()
        problems += missing
        if not options.certs:
            problems.append(f"multi-host mode needs --certs DIR: the certificates Prefect and MLflow serve HTTPS with "
                            f"and Dask's TLS (make them with `sluice secrets DIR --host {options.host}`)")
        elif problems_found := web_certificate_problems(options.certs, options.host):
            problems += problems_found
        elif options.dask_workers and (missing := [Path(path).name for path in tls_env(options.certs, scheduler=True)
                                                   .values() if not Path(path).exists()]):
            problems.append(f"--certs {options.certs} lacks {', '.join(dict.fromkeys(missing))} (make them with "
                            f"`sluice secrets DIR`)")
    if problems:
        raise ServerError("cannot start:\n" + "\n".join(f"  {line}" for line in problems))
    return credentials


def services(options: ServerOptions, credentials: Credentials | None = None) -> list[Service]:
    """What to start, with the environment and the services each needs; `credentials` in multi-host mode."""
    state = options.state.resolve()
    python = sys.executable
    bin_dir = Path(python).parent
    common = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1",
              "PYTHONPATH": str(ROOT)}
    clients = common | {"PREFECT_API_URL": options.prefect_api_url, "MLFLOW_TRACKING_URI": options.mlflow_url}
    if credentials:
        clients |= credentials.client_env() | https_client_env(options.certs)
    # the URL the UI's browser code calls; set it yourself behind a proxy
    prefect_env = {"PREFECT_HOME": str(state / "prefect"),
                   "PREFECT_UI_API_URL": os.environ.get("PREFECT_UI_API_URL", options.prefect_api_url)}
    mlflow = Service("mlflow", [str(bin_dir / "mlflow"), "server", "--host", options.host, "--port",
                                str(options.mlflow_port), "--workers", "1", *_mlflow_store(options)],
                     f"{options.mlflow_url}/health",
                     common | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})   # GenAI job runners: 8 idle processes
    prefect = Service("prefect", [str(bin_dir / "prefect"), "server", "start", "--host", options.host,
                                  "--port", str(options.prefect_port), "--analytics-off"],
                      f"{options.prefect_api_url}/health", common | prefect_env)
    if credentials:
        prefect.env["PREFECT_SERVER_API_AUTH_STRING"] = credentials.auth_string
        _with_basic_auth(mlflow, options, credentials)
        _over_https(prefect, mlflow, options)
    found = [prefect, mlflow]
    # in multi-host mode, every process that reaches the scheduler has the node certificate
    dask_clients = clients | (tls_env(options.certs) if options.multi_host else {})
    if options.dask_workers:
        from flows.dask_cluster import HOUSEKEEPING_CONFIG_ENV, SCHEDULER_CONFIG_ENV, WORKER_CONFIG_ENV, WORKER_PRELOAD

        tls = (tls_env(options.certs, scheduler=True) | REQUIRE_ENCRYPTION_ENV) if options.multi_host else {}
        found.append(Service("dask-scheduler", [str(bin_dir / "dask"), "scheduler", "--host", options.host,
                                                "--port", str(options.dask_port), "--protocol",
                                                options.dask_address.split("://")[0], "--dashboard-address",
                                                f"{options.dashboard_host}:{options.dask_dashboard_port}"],
                             f"http://{options.dashboard_host}:{options.dask_dashboard_port}/health",
                             clients | SCHEDULER_CONFIG_ENV | HOUSEKEEPING_CONFIG_ENV | tls))
        from flows.training_nodes import TRAINER_RESOURCE

        preload = [arg for module in WORKER_PRELOAD for arg in ("--preload", module)]
        # every worker can be a training node (hardware.nodes > 1): one torchrun per worker at most
        found += [Service(f"dask-worker-{index}", [str(bin_dir / "dask"), "worker", options.dask_address,
                                                  "--nthreads", "1", "--host", options.host,
                                                  "--dashboard-address", f"{options.dashboard_host}:0",
                                                  "--resources", f"{TRAINER_RESOURCE}=1",
                                                  "--name", f"sluice-{index}", *preload], None,
                          dask_clients | WORKER_CONFIG_ENV | HOUSEKEEPING_CONFIG_ENV | tls, needs=("dask-scheduler",))
                  for index in range(options.dask_workers)]
    if options.deployments:
        dask = {"SLUICE_DASK_ADDRESS": options.dask_address} if options.dask_workers else {}
        # started at once: it imports the flows, then waits for the Prefect API before it registers them
        found.append(Service("deployments", [python, "-m", "flows.deployments", options.deployments], None,
                             dask_clients | dask))
    return found


def _mlflow_store(options: ServerOptions) -> list[str]:
    """On loopback, the store the CLI uses when no server runs (tracking.store): one store, the CLI's runs and the
    deployments' side by side, artifacts read and written in place by this machine's clients. Across hosts, a
    store of the server's own whose artifacts it serves: other machines cannot reach this one's files."""
    if options.multi_host:
        state = options.state.resolve()
        return ["--backend-store-uri", options.backend_store_uri or f"sqlite:///{state / 'mlflow.db'}",
                "--artifacts-destination", str(state / "mlartifacts"), "--serve-artifacts"]
    return ["--backend-store-uri", options.backend_store_uri or local_tracking_uri(),
            "--default-artifact-root", local_artifact_root().resolve().as_uri(), "--no-serve-artifacts"]


def _with_basic_auth(mlflow: Service, options: ServerOptions, credentials: Credentials) -> None:
    """MLflow's basic-auth app, its admin the credentials' user; the health check logs in, so that a user database
    kept from an earlier start with another password stops the server here rather than every client later."""
    users = options.state.resolve()
    # MLflow checks the Host header against its allowed hosts (loopback and private networks by default)
    mlflow.command += ["--app-name", "basic-auth", "--allowed-hosts", f"{options.host}:{options.mlflow_port}"]
    mlflow.env |= {"MLFLOW_AUTH_CONFIG_PATH": str(users / MLFLOW_AUTH_CONFIG),
                   "MLFLOW_AUTH_ADMIN_USERNAME": credentials.username,
                   "MLFLOW_AUTH_ADMIN_PASSWORD": credentials.password,
                   # signs the UI's CSRF tokens; a new one per start only logs browsers out
                   "MLFLOW_FLASK_SERVER_SECRET_KEY": os.environ.get("MLFLOW_FLASK_SERVER_SECRET_KEY")
                   or secrets.token_hex(32)}
    mlflow.health_url = f"{options.mlflow_url}/api/2.0/mlflow/experiments/search?max_results=1"
    mlflow.login, mlflow.refused = (credentials.username, credentials.password), mlflow_login_refused(users)


def _over_https(prefect: Service, mlflow: Service, options: ServerOptions) -> None:
    """Both servers on uvicorn's TLS with the web certificate: Prefect's app run by uvicorn as `prefect server
    start --background` runs it (the start command has no TLS options), MLflow's through its uvicorn options."""
    certs = options.certs.resolve()
    # uvicorn over TLS waits on its clients' open connections at shutdown until killed (15 s a server): bound it
    tls = ["--ssl-keyfile", str(certs / WEB_KEY), "--ssl-certfile", str(certs / WEB_CERT),
           "--timeout-graceful-shutdown", "3"]
    prefect.command = [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
                       "--host", options.host, "--port", str(options.prefect_port), *tls]
    prefect.env["PREFECT__SERVER_FINAL"] = "1"         # as `--background` sets it: the app runs its services
    mlflow.command += ["--uvicorn-opts", shlex.join(tls)]
    prefect.ca_file = mlflow.ca_file = certs / CA_CERT


def busy_ports(options: ServerOptions) -> list[int]:
    wanted = [(options.host, options.prefect_port), (options.host, options.mlflow_port)]
    if options.dask_workers:
        wanted += [(options.host, options.dask_port), (options.dashboard_host, options.dask_dashboard_port)]
    busy = []
    for host, port in wanted:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the servers do: TIME_WAIT is not busy
            try:
                probe.bind((host, port))
            except OSError:
                busy.append(port)
    return busy


def stop_order(started: list[Service]) -> list[list[Service]]:
    """The started services in the layers they are stopped in, one layer after another and each layer's services
    all at once: the deployments process first (its flow runs report to Prefect and MLflow and run on Dask), then
    every service nothing left running needs, then those the others needed (the Dask scheduler, after its
    workers). At once, the services take the slowest one's time to stop (a Dask worker ~2.4 s on 2 cores) instead
    of the sum (~6 s)."""
    first = [service for service in started if service.name == "deployments"]
    rest = [service for service in started if service not in first]
    needed = {name for service in rest for name in service.needs}
    return [layer for layer in (first, [service for service in rest if service.name not in needed],
                                [service for service in rest if service.name in needed]) if layer]


class Supervisor:
    """Starts the services, each once those it needs answer, and stops them all, whatever happens."""

    def __init__(self, options: ServerOptions, out=sys.stdout):
        self.options, self.out = options, out
        self.started: list[Service] = []
        self.stopping = threading.Event()
        self.credentials: Credentials | None = None

    def start(self, startup_timeout_s: float = 180.0) -> None:
        self.credentials = checked_credentials(self.options)
        if busy := busy_ports(self.options):
            raise ServerError(f"port(s) {', '.join(map(str, busy))} on {self.options.host} are in use: another "
                              f"sluice server (or another program) is running; stop it, or pick other ports "
                              f"(--prefect-port, --mlflow-port, --dask-port, --dask-dashboard-port)")
        # its databases (runs, parameters, MLflow's users and their password hashes) and logs: the owner's only
        self.options.state.mkdir(parents=True, exist_ok=True)
        self.options.state.chmod(0o700)
        logs = self.options.state / "logs"
        logs.mkdir(exist_ok=True)
        if self.credentials:         # MLflow's basic-auth configuration: where its users are kept (no secret in it)
            (self.options.state / MLFLOW_AUTH_CONFIG).write_text(mlflow_auth_config(self.options.state.resolve()))
        waiting = services(self.options, self.credentials)
        answered: set[str] = set()
        while waiting or len(answered) < len(self.started):
            for service in [service for service in waiting if set(service.needs) <= answered]:
                waiting.remove(service)
                self._launch(service, logs / f"{service.name}.log", startup_timeout_s)
            for service in [service for service in self.started if service.name not in answered]:
                if self._answers(service, logs / f"{service.name}.log", startup_timeout_s):
                    answered.add(service.name)
                    print(f"  {service.name:<15} pid {service.process.pid}", file=self.out, flush=True)
            if len(answered) < len(self.started):
                time.sleep(0.5)
        if not self.options.multi_host:     # the CLI on this machine tracks through this server while it runs
            (state_dir() / SERVER_RECORD).write_text(json.dumps({"pid": os.getpid(),
                                                                 "mlflow_url": self.options.mlflow_url}))

    def urls(self) -> dict[str, str]:
        options = self.options
        found = {"Prefect UI": f"{options.scheme}://{options.host}:{options.prefect_port}",
                 "Prefect API": options.prefect_api_url, "MLflow UI": options.mlflow_url}
        if options.dask_workers:
            found |= {"Dask scheduler": options.dask_address,
                      "Dask dashboard": f"http://{options.dashboard_host}:{options.dask_dashboard_port}/status"}
        return found

    def watch(self, poll_s: float = 1.0) -> str:
        """Until stop() is called or a service exits by itself; returns why."""
        while not self.stopping.wait(poll_s):
            for service in self.started:
                if service.process.poll() is not None:
                    return f"{service.name} exited with {service.process.returncode} (see its log)"
        return "stopped"

    def stop(self, grace_s: float = 15.0) -> None:
        self.stopping.set()
        record = state_dir() / SERVER_RECORD
        if self.started and not self.options.multi_host and record.exists() \
                and json.loads(record.read_text())["pid"] == os.getpid():
            record.unlink()
        for layer in stop_order(self.started):
            kill_process_groups({service.process.pid: service.process.poll for service in layer}, grace_s)
        self.started = []

    def _launch(self, service: Service, log_path: Path, startup_timeout_s: float) -> None:
        log = open(log_path, "ab")
        service.process = subprocess.Popen(service.command, cwd=ROOT, env=os.environ | service.env, stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        service.deadline = time.monotonic() + startup_timeout_s
        self.started.append(service)

    @staticmethod
    def _answers(service: Service, log: Path, timeout_s: float) -> bool:
        """Whether the service answers its health check now (one without a check: once started); an error if it
        exited, refused the login or is past its deadline."""
        if service.process.poll() is not None:
            raise ServerError(f"{service.name} exited with {service.process.returncode} while starting:\n"
                              f"{_tail(log)}")
        status = _status(service.health_url, service.login, service.ca_file) if service.health_url else 200
        if status == 200:
            return True
        if service.login and status in (401, 403):
            raise ServerError(f"{service.name}: {service.refused}")
        if time.monotonic() > service.deadline:
            raise ServerError(f"{service.name} did not answer {service.health_url} within {timeout_s:.0f} s:\n"
                              f"{_tail(log)}")
        return False


def _status(url: str, login: tuple[str, str] | None, ca_file: Path | None) -> int | None:
    """The HTTP status of a GET (None: no answer), made with basic-auth credentials if given, over HTTPS verified
    with `ca_file` if given."""
    request = urllib.request.Request(url)
    if login:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(login).encode()).decode())
    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def run_server(options: ServerOptions, out=sys.stdout) -> int:
    """The `sluice server` command: start, print the URLs, wait for Ctrl-C / SIGTERM, stop everything."""
    supervisor = Supervisor(options, out)
    previous = {sig: signal.signal(sig, lambda *_: supervisor.stopping.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"sluice server: starting (logs in {options.state / 'logs'})", file=out, flush=True)
        supervisor.start()
        for name, url in supervisor.urls().items():
            print(f"  {name + ':':<16} {url}", file=out)
        if options.deployments:
            print(f"  deployments:     {options.deployments} ({options.scheme}://{options.host}:{options.prefect_port}"
                  f"/deployments)", file=out)
        if supervisor.credentials:
            print("Multi-host mode: Prefect asks for its auth string, MLflow for basic-auth credentials, Dask for "
                  "TLS certificates; the Dask dashboards answer on this machine only.", file=out)
            print(client_instructions(supervisor.urls(), supervisor.credentials, options.certs), file=out)
        print("sluice server: up; Ctrl-C stops everything", file=out, flush=True)
        reason = supervisor.watch()
        print(f"sluice server: {reason}; stopping", file=out, flush=True)
        return 0 if reason == "stopped" else 1
    except ServerError as error:
        print(f"sluice server: {error}", file=sys.stderr, flush=True)
        return 2
    finally:
        supervisor.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

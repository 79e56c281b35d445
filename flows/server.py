"""`sluice server`: the long-running services, each a child process in its own process group.

- a Prefect server (SQLite under the state dir, or PREFECT_API_DATABASE_CONNECTION_URL, e.g. Postgres);
- an MLflow tracking server (SQLite backend and a served artifact store under the state dir, or
  `--backend-store-uri`);
- optionally a Dask scheduler and N `dask worker` processes that reach the Prefect API through PREFECT_API_URL;
- the deployments process (`flows/deployments.py`) serving `configs/deployments.yaml` against that Prefect
  server, its flow runs logging to the MLflow server and computing on the Dask cluster.

Every port is checked before anything starts (a second server on busy ports stops with the port named); each
service is started after the one before answers its health check. Ctrl-C or SIGTERM, or any service dying,
stops everything started, process group by process group (SIGTERM, then SIGKILL after a grace period).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flows.processes import kill_process_group

ROOT = Path(__file__).resolve().parents[1]


class ServerError(RuntimeError):
    """A service could not start: a busy port, a failed health check, a process that exited."""


@dataclass
class Service:
    name: str
    command: list[str]
    health_url: str | None = None          # None: up once started (dask workers, the deployments process)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None


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

    @property
    def prefect_api_url(self) -> str:
        return f"http://{self.host}:{self.prefect_port}/api"

    @property
    def mlflow_url(self) -> str:
        return f"http://{self.host}:{self.mlflow_port}"

    @property
    def dask_address(self) -> str:
        return f"tcp://{self.host}:{self.dask_port}"


def services(options: ServerOptions) -> list[Service]:
    """What to start, in order, with the environment each needs."""
    state = options.state.resolve()
    python = sys.executable
    bin_dir = Path(python).parent
    common = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1",
              "PYTHONPATH": str(ROOT)}
    clients = common | {"PREFECT_API_URL": options.prefect_api_url, "MLFLOW_TRACKING_URI": options.mlflow_url}
    found = [
        Service("prefect", [str(bin_dir / "prefect"), "server", "start", "--host", options.host,
                            "--port", str(options.prefect_port), "--analytics-off"],
                f"{options.prefect_api_url}/health",
                common | {"PREFECT_HOME": str(state / "prefect"), # the URL the UI's browser code calls; set it yourself behind a proxy or for --host 0.0.0.0
                          "PREFECT_UI_API_URL": os.environ.get("PREFECT_UI_API_URL", options.prefect_api_url)}),
        Service("mlflow", [str(bin_dir / "mlflow"), "server", "--host", options.host, "--port",
                           str(options.mlflow_port), "--workers", "1", "--backend-store-uri",
                           options.backend_store_uri or f"sqlite:///{state / 'mlflow.db'}",
                           "--artifacts-destination", str(state / "mlartifacts"), "--serve-artifacts"],
                f"{options.mlflow_url}/health",
                common | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}),   # GenAI job runners: 8 idle processes
    ]
    if options.dask_workers:
        from flows.dask_cluster import SCHEDULER_CONFIG_ENV, WORKER_CONFIG_ENV, WORKER_PRELOAD

        found.append(Service("dask-scheduler", [str(bin_dir / "dask"), "scheduler", "--host", options.host,
                                                "--port", str(options.dask_port), "--dashboard-address",
                                                f"{options.host}:{options.dask_dashboard_port}"],
                             f"http://{options.host}:{options.dask_dashboard_port}/health",
                             clients | SCHEDULER_CONFIG_ENV))
        from flows.training_nodes import TRAINER_RESOURCE

        preload = [arg for module in WORKER_PRELOAD for arg in ("--preload", module)]
        # every worker can be a training node (hardware.nodes > 1): one torchrun per worker at most
        found += [Service(f"dask-worker-{index}", [str(bin_dir / "dask"), "worker", options.dask_address,
                                                  "--nthreads", "1", "--host", options.host,
                                                  "--resources", f"{TRAINER_RESOURCE}=1",
                                                  "--name", f"sluice-{index}", *preload], None,
                          clients | WORKER_CONFIG_ENV)
                  for index in range(options.dask_workers)]
    if options.deployments:
        dask = {"SLUICE_DASK_ADDRESS": options.dask_address} if options.dask_workers else {}
        found.append(Service("deployments", [python, "-m", "flows.deployments", options.deployments], None,
                             clients | dask))
    return found


def busy_ports(options: ServerOptions) -> list[int]:
    wanted = [options.prefect_port, options.mlflow_port]
    if options.dask_workers:
        wanted += [options.dask_port, options.dask_dashboard_port]
    busy = []
    for port in wanted:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the servers do: TIME_WAIT is not busy
            try:
                probe.bind((options.host, port))
            except OSError:
                busy.append(port)
    return busy


class Supervisor:
    """Starts the services in order and stops them all, whatever happens."""

    def __init__(self, options: ServerOptions, out=sys.stdout):
        self.options, self.out = options, out
        self.started: list[Service] = []
        self.stopping = threading.Event()

    def start(self, startup_timeout_s: float = 180.0) -> None:
        if busy := busy_ports(self.options):
            raise ServerError(f"port(s) {', '.join(map(str, busy))} on {self.options.host} are in use: another "
                              f"sluice server (or another program) is running; stop it, or pick other ports "
                              f"(--prefect-port, --mlflow-port, --dask-port, --dask-dashboard-port)")
        logs = self.options.state / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for service in services(self.options):
            log = open(logs / f"{service.name}.log", "ab")
            service.process = subprocess.Popen(service.command, cwd=ROOT, env=os.environ | service.env, stdout=log,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               start_new_session=True)
            log.close()
            self.started.append(service)
            self._wait_healthy(service, logs / f"{service.name}.log", startup_timeout_s)
            print(f"  {service.name:<15} pid {service.process.pid}", file=self.out, flush=True)

    def urls(self) -> dict[str, str]:
        options = self.options
        found = {"Prefect UI": f"http://{options.host}:{options.prefect_port}",
                 "Prefect API": options.prefect_api_url, "MLflow UI": options.mlflow_url}
        if options.dask_workers:
            found |= {"Dask scheduler": options.dask_address,
                      "Dask dashboard": f"http://{options.host}:{options.dask_dashboard_port}/status"}
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
        for service in reversed(self.started):
            kill_process_group(service.process.pid, grace_s, reap=service.process.poll)
        self.started = []

    def _wait_healthy(self, service: Service, log: Path, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if service.process.poll() is not None:
                raise ServerError(f"{service.name} exited with {service.process.returncode} while starting:\n"
                                  f"{_tail(log)}")
            if service.health_url is None or _answers(service.health_url):
                return
            if time.monotonic() > deadline:
                raise ServerError(f"{service.name} did not answer {service.health_url} within {timeout_s:.0f} s:\n"
                                  f"{_tail(log)}")
            time.sleep(0.5)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


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
            print(f"  deployments:     {options.deployments} (http://{options.host}:{options.prefect_port}"
                  f"/deployments)", file=out)
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

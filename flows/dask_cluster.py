"""The Dask cluster a pipeline run uses: an existing scheduler, or a LocalCluster sized to the machine, started when
the run first needs it."""
from __future__ import annotations

import logging
import os
import threading
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Iterator

from prefect.settings import get_current_settings

from configs.schema import DaskConfig
from flows.main_guard import check_main_guard
from storage.environment import added_environment

# Imported by each LocalCluster worker while the cluster starts (in parallel, counted as start-up), so the
# first task of a stage does not pay for importing Prefect's task engine and the extraction libraries, nor a
# report's first chart on that worker for matplotlib's (~0.6 s, in the middle of a stage otherwise); and first,
# flows.worker_console, so that a failed call is not logged again by its worker.
# Dask's statistical profiler samples the worker threads' stacks from the worker's event loop and holds those
# frames: a frame's locals are then freed on the event-loop thread, and Resiliparse's parse trees must be freed
# on the thread that made them ("HTMLTreePy is unsendable, but is being dropped on another thread"). Off.
# Dask's nanny also starts each worker with MALLOC_TRIM_THRESHOLD_=65536: glibc then gives memory back to the OS
# whenever 64 KB at the top of the heap are free, and takes it back a page fault at a time. Dedup's features calls
# took 22-26 s that way against 17-18 s with glibc's own adaptive threshold (1.3M page faults against 40k; 16 s in
# a plain process), for the same peak worker memory. Unset (None is the nanny's "do not set").
WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
WORKER_CONFIG_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",   # the same, for `dask worker`
                     "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON": "{'MALLOC_TRIM_THRESHOLD_': None}"}
# pyarrow imports pandas (~0.25 s) the first time a worker builds an array from a list, which every stage's first
# call on each worker did: dedup's features calls took 0.65 s first against 0.33 s after on 2 workers.
# datasketch is imported where the signatures are computed (tasks/dedup/minhash.py), so named here; the domain
# model's scikit-learn (~0.4 s a worker, at the domains stage's first call) in its calls, so its module is named.
LIBRARY_PRELOAD = ("tasks.extract.task", "tasks.dedup.task", "datasketch", "tasks.tokenize.task",
                   "tasks.mixture.task", "tasks.quality.task", "tasks.evaluation.task", "tasks.domains.model",
                   "matplotlib.figure", "matplotlib.backends.backend_agg", "pyarrow.pandas_compat", "pyarrow.dataset")
WORKER_PRELOAD = ("flows.worker_console", "prefect.task_engine", *LIBRARY_PRELOAD)
# A LocalCluster's workers are forked from one process (multiprocessing's forkserver) that has imported
# LIBRARY_PRELOAD once, instead of each spawned interpreter importing it: on 2 cores a cluster was up in ~3 s instead
# of ~6, a process's next cluster in ~0.2 s, and one closed in ~0.1 s instead of ~2. Prefect's task engine is not
# among them: Prefect reads its settings (the API's URL, which a worker gets in its environment) when imported, so
# each worker imports it after the fork. The forkserver starts at the first worker's start (or earlier:
# `start_forkserver`), inside the nanny's pre-spawn environment (OMP_NUM_THREADS=1 and the like, PYTHONHASHSEED), so
# workers see what spawned ones would.
FORKSERVER_CONFIG = {"distributed.worker.multiprocessing-method": "forkserver"}
# The scheduler gives a worker only as many tasks as it has threads. Dask's default (1.1) rounds up to two for a
# worker of one thread, so a call could wait behind a long one (a chart, a large shard) while another worker sat
# idle until work stealing moved it: seen as 0.3 s idle in the dedup stage. Calls here last 0.05-2 s, so the
# scheduler round trip this costs between calls is small.
SCHEDULER_CONFIG = {"distributed.scheduler.worker-saturation": 1.0}
SCHEDULER_CONFIG_ENV = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}   # the same, for `dask scheduler`
# Dask's housekeeping timers, in every process of a cluster: the event loop's tick (every 20 ms; it only feeds the
# "event loop was unresponsive" warning, whose threshold is 3 s), the system monitor behind the dashboard's plots
# (0.5 s) and the nanny's memory check (0.1 s; the memory limits then act within half a second). At Dask's defaults
# an idle LocalCluster of 2 workers used 5.6 CPU-s a minute, at these 1.1: on 2 cores that is 8% of a core for as
# long as a cluster lives (the test session's lives 20 minutes; `sluice server`'s for good).
HOUSEKEEPING_CONFIG = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "2s",
                       "distributed.worker.memory.monitor-interval": "500ms"}
# the same, for `dask scheduler|worker`: Dask's variable for a key is DASK_ and the key, "." as "__", "-" as "_"
HOUSEKEEPING_CONFIG_ENV = {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): value
                           for key, value in HOUSEKEEPING_CONFIG.items()}
# The cluster of the innermost `dask_cluster` block: where the stage flows started inside it send their calls
# (flows.stage_task_runner).
_CLUSTER: ContextVar[RunCluster | None] = ContextVar("sluice_dask_cluster", default=None)


class RunCluster:
    """The Dask cluster of a `dask_cluster` block: an existing scheduler, or a LocalCluster started when its address
    is first asked for (a stage's first call). A run whose stages are all in the store starts none: starting and
    closing one was ~8.5 s of a 16 s cached demo run on 2 cores."""

    def __init__(self, config: DaskConfig, stack: ExitStack):
        self._config, self._stack = config, stack
        self._address = config.address
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        """The scheduler's address, the LocalCluster started first if need be."""
        with self._lock:
            if self._address is None:
                self._address = self._start()
        return self._address

    @property
    def started(self) -> str | None:
        """The scheduler's address if there is one already (nothing is started)."""
        return self._address

    def _start(self) -> str:
        import dask
        from distributed import LocalCluster

        workers = self._config.n_workers or os.cpu_count() or 1
        self._stack.enter_context(dask.config.set(WORKER_CONFIG | SCHEDULER_CONFIG | HOUSEKEEPING_CONFIG
                                                  | FORKSERVER_CONFIG))
        _preload_forkserver()
        cluster = self._stack.enter_context(LocalCluster(
            n_workers=workers, threads_per_worker=self._config.threads_per_worker, processes=True,
            dashboard_address=":0", host="127.0.0.1", env=prefect_api_env(), preload=list(WORKER_PRELOAD)))
        _logger().info("Dask LocalCluster of %d workers started: scheduler %s", workers, cluster.scheduler_address)
        return cluster.scheduler_address


def start_forkserver() -> None:
    """Start the forkserver this process's LocalCluster workers are forked from, now and in the background, in the
    environment a nanny starts it in: it imports the stages' libraries while this process waits on something else
    (`sluice run`: its temporary Prefect server, ~3 s with a core idle), so that the first stage's cluster is up
    sooner (from the command to the cluster ~0.7-1 s less on the 1x bench corpus). Prefect stays out of it as
    before: with Prefect's task engine imported there too the cluster was up ~1.3 s sooner still, but its workers
    extracted ~5% slower (9.2-9.5 s against 8.8-9.0 s, 3 A B pairs), which at 4x cost more than it saved. Nothing
    else starts; no effect once the forkserver runs."""
    import multiprocessing.forkserver

    import dask
    import distributed  # noqa: F401  (its config defaults, which the blocks below set over and restore)

    with dask.config.set(WORKER_CONFIG):
        environment = _pre_spawn_environment()
    with added_environment(environment), dask.config.set(FORKSERVER_CONFIG):
        _preload_forkserver()
        multiprocessing.forkserver.ensure_running()


def _pre_spawn_environment() -> dict[str, str]:
    """What a Dask nanny sets in its process before starting a worker process (distributed.nanny.Nanny's
    `pre_spawn_env`: the configured variables, the process's own value first, and a fixed hash seed)."""
    import dask

    configured = dask.config.get("distributed.nanny.pre-spawn-environ")
    environment = {name: os.environ.get(name, str(value)) for name, value in configured.items() if value is not None}
    if environment.get("PYTHONHASHSEED") in (None, "0"):
        environment["PYTHONHASHSEED"] = "6640"
    return environment


def _preload_forkserver() -> None:
    """The modules the forkserver imports when it starts (no effect once it runs). Dask's multiprocessing context
    sets its own list (distributed and every optional package it knows) on its first use, so it is used first."""
    from distributed.utils import get_mp_context

    get_mp_context().set_forkserver_preload(["distributed", *LIBRARY_PRELOAD])


@contextmanager
def dask_cluster(config: DaskConfig) -> Iterator[RunCluster]:
    """The cluster stage flows started inside the block run their calls on: the recipe's scheduler, or a
    LocalCluster sized to the machine, started at the first call and closed on exit, also on error or cancel.

    Workers of an existing cluster must be able to reach the Prefect API themselves (PREFECT_API_URL in
    their environment); LocalCluster workers are given the API this process uses.
    """
    if not config.address:
        check_main_guard()      # before any worker could start, not at the first stage that needs one
    with ExitStack() as stack:
        cluster = RunCluster(config, stack)
        token = _CLUSTER.set(cluster)
        try:
            yield cluster
        finally:
            _CLUSTER.reset(token)


def current_cluster() -> RunCluster | None:
    """The cluster of the `dask_cluster` block this runs in, if any."""
    return _CLUSTER.get()


def _logger() -> logging.Logger:
    """The flow run's logger where there is one (the start then shows in the run's log)."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def prefect_api_env() -> dict[str, str]:
    """PREFECT_API_URL for worker processes. Without it each worker would start its own ephemeral Prefect
    server (tens of seconds each) and its task runs would be recorded in a throw-away database."""
    url = get_current_settings().api.url
    if not url:
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()  # the ephemeral server of this process (a per-port singleton)
        url = server.api_url if server.running else None
    return {"PREFECT_API_URL": url} if url else {}

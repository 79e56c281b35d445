"""The pipeline's LocalCluster: started when a stage first needs it, a call never waits behind a long one on a busy
worker while another worker is free, and the workers come up with the libraries the stages' calls and charts
import."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import time

from distributed import Client, get_worker


def _busy(seconds: float) -> str:
    time.sleep(seconds)
    return get_worker().address


def test_short_calls_go_to_the_free_worker_not_behind_a_long_call(dask_address):
    with Client(dask_address) as client:
        long_call = client.submit(_busy, 1.5, pure=False)
        while not any(client.processing().values()):        # the long call is on a worker
            time.sleep(0.01)
        time.sleep(0.1)
        short_calls = client.gather(client.map(_busy, [0.05] * 6, pure=False))
        busy_worker = long_call.result()
    # With Dask's default worker saturation (1.1, two tasks for a one-thread worker) one of them would queue on the
    # busy worker until work stealing moved it.
    assert busy_worker not in short_calls


def test_workers_start_with_the_stages_libraries_loaded(dask_address):
    from flows.dask_cluster import WORKER_PRELOAD

    with Client(dask_address) as client:
        loaded = client.run(lambda: [module for module in WORKER_PRELOAD if module in sys.modules])
    assert all(modules == list(WORKER_PRELOAD) for modules in loaded.values())


def test_forked_workers_read_the_runs_prefect_api_and_one_blas_thread_as_spawned_ones_would(dask_address):
    """The workers are forked from a process that imported the stages' libraries, not Prefect (flows.dask_cluster):
    Prefect's settings in a worker hold the API of the process that started the cluster, and the BLAS pools were
    sized under the nanny's OMP_NUM_THREADS=1 (a threaded SVD gives other domains)."""
    from prefect.settings import get_current_settings
    from threadpoolctl import threadpool_info

    from flows.dask_cluster import prefect_api_env

    def seen() -> tuple:
        return (get_current_settings().api.url, os.environ.get("OMP_NUM_THREADS"),
                sorted({pool["num_threads"] for pool in threadpool_info()}))

    with Client(dask_address) as client:
        found = client.run(seen)
    api = prefect_api_env()["PREFECT_API_URL"]
    assert len(found) == 2 and all(value == (api, "1", [1]) for value in found.values()), (api, found)


def test_workers_start_without_dasks_64_kb_malloc_trim(dask_address):
    with Client(dask_address) as client:
        found = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert found and all(value is None for value in found.values())


def test_dask_worker_processes_get_the_same_nanny_environment():
    """`sluice server` and compose start `dask worker` with WORKER_CONFIG_ENV; its nanny must read it as unset."""
    from flows.dask_cluster import WORKER_CONFIG_ENV

    code = "import dask, distributed; print(dask.config.get('distributed.nanny.pre-spawn-environ'))"
    out = subprocess.run([sys.executable, "-c", code], env=os.environ | WORKER_CONFIG_ENV, capture_output=True,
                         text=True, check=True).stdout
    assert "'MALLOC_TRIM_THRESHOLD_': None" in out and "OMP_NUM_THREADS" in out    # None: the nanny leaves it unset


def test_every_process_of_a_cluster_runs_the_lighter_housekeeping_timers(dask_address):
    """The LocalCluster's scheduler, nannies and workers, and `dask scheduler|worker` through the environment."""
    import dask

    from flows.dask_cluster import HOUSEKEEPING_CONFIG, HOUSEKEEPING_CONFIG_ENV

    def timers() -> dict:
        return {key: dask.config.get(key) for key in HOUSEKEEPING_CONFIG}

    with Client(dask_address) as client:
        found = [*client.run(timers).values(), client.run_on_scheduler(timers)]
        nannies = client.run(lambda dask_worker: dask_worker.memory_manager.memory_monitor_interval, nanny=True)
    assert found == [HOUSEKEEPING_CONFIG] * 3 and set(nannies.values()) == {0.5}
    code = f"import dask, distributed; print({{key: dask.config.get(key) for key in {list(HOUSEKEEPING_CONFIG)!r}}})"
    out = subprocess.run([sys.executable, "-c", code], env=os.environ | HOUSEKEEPING_CONFIG_ENV, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == repr(HOUSEKEEPING_CONFIG)


def test_a_run_whose_stages_are_all_in_the_store_starts_no_localcluster(data_dir, tmp_path):
    """The cluster block starts nothing until a stage sends a call (test_cli_run's cold run is one that does): with
    the extraction already in the store (made in this process), the run completes without a cluster."""
    from configs.schema import DaskConfig, parse_recipe
    from flows.curation import curation_flow
    from flows.dask_cluster import dask_cluster
    from tasks.extract.stage import ExtractStage
    from tasks.stage_run import run_in_process

    with dask_cluster(DaskConfig(n_workers=1)) as cluster:
        assert cluster.started is None
    page = data_dir / "warc" / "commoncrawl" / "whirlwind-python" / "whirlwind.warc.gz"
    recipe = parse_recipe({"name": "lazy-cluster", "store": str(tmp_path / "store"),
                           "input": {"paths": [str(page)], "source": "lazy-test"}, "dask": {"n_workers": 1},
                           "dedup": {"enabled": False}, "quality": {"enabled": False}, "domains": {"enabled": False},
                           "tokenizer": {"enabled": False}, "mlflow": {"experiment": "lazy-cluster"}})
    made = run_in_process(ExtractStage(recipe), recipe.store)
    run = curation_flow(recipe)
    assert run["dask_scheduler"] is None
    assert run["stages"]["extract"]["cached"] and run["stages"]["extract"]["digest"] == made["digest"]


EARLY_FORKSERVER_SCRIPT = """
import multiprocessing.forkserver, os, sys

from distributed import Client

from configs.schema import DaskConfig
from flows.dask_cluster import WORKER_PRELOAD, dask_cluster, start_forkserver


def seen():
    from prefect.settings import get_current_settings
    from threadpoolctl import threadpool_info

    return (os.getppid(), get_current_settings().api.url, os.environ.get("OMP_NUM_THREADS"),
            os.environ.get("PYTHONHASHSEED"), sorted({pool["num_threads"] for pool in threadpool_info()}),
            all(module in sys.modules for module in WORKER_PRELOAD))


if __name__ == "__main__":
    os.environ["PREFECT_API_URL"] = sys.argv[1]
    start_forkserver()
    forkserver = multiprocessing.forkserver._forkserver._forkserver_pid     # started, before any cluster
    before = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "PYTHONHASHSEED")}
    with dask_cluster(DaskConfig(n_workers=2)) as cluster, Client(cluster.address) as client:
        print(repr((forkserver, before, list(client.run(seen).values()))))
"""


def test_workers_forked_from_the_forkserver_sluice_run_starts_early_are_as_a_nannys(tmp_path):
    """`sluice run` starts the forkserver while its Prefect server comes up (flows.dask_cluster.start_forkserver): the
    cluster's workers are forked from it and read the run's API, one BLAS thread and the nanny's hash seed, with
    every preloaded module, and this process's environment is left as it was."""
    script = tmp_path / "early_forkserver.py"
    script.write_text(EARLY_FORKSERVER_SCRIPT)
    api = "http://127.0.0.1:9/api"
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("OMP_NUM_THREADS", "PYTHONHASHSEED", "PREFECT_API_URL")}
    out = subprocess.run([sys.executable, str(script), api], env=environment | {"PYTHONPATH": os.getcwd()},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    forkserver, before, workers = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert before == {"OMP_NUM_THREADS": None, "PYTHONHASHSEED": None}
    assert forkserver and len(workers) == 2, (forkserver, workers)
    assert all(worker == (forkserver, api, "1", "6640", [1], True) for worker in workers), (forkserver, workers)

"""Starting and stopping the trainer's torchrun: its command line, its environment, its process group.

Used by the training flow on one machine and by each node's Dask task when a run spans nodes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from flows.processes import free_port, kill_process_group

ROOT = Path(__file__).resolve().parents[1]


def torchrun_command(config_path: str, processes: int, nodes: int = 1, node_rank: int = 0,
                     master: tuple[str, int] | None = None) -> list[str]:
    """torchrun running training.train with `processes` ranks on this machine: alone, meeting on a free loopback
    port, or as node `node_rank` of `nodes`, meeting at `master` (the first node's host and a port free there,
    where torchrun's c10d store listens)."""
    return [*launcher_command(processes, nodes, node_rank, master), "-m", "training.train", config_path]


def launcher_command(processes: int, nodes: int = 1, node_rank: int = 0,
                     master: tuple[str, int] | None = None) -> list[str]:
    """torchrun and its own flags, without what its ranks run."""
    host, port = master or ("127.0.0.1", free_port())
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--node-rank", str(node_rank),
            "--nproc-per-node", str(processes), "--master-addr", host, "--master-port", str(port)]


def trainer_env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                         "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def start_trainer(command: list[str], stdout, env: dict[str, str] | None = None) -> subprocess.Popen:
    """torchrun in a process group of its own (so that killing the group stops every rank); `env`: added to its
    environment."""
    return subprocess.Popen(command, cwd=ROOT, env=trainer_env() | (env or {}), stdout=stdout,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def kill_group(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the whole process group (torchrun and its ranks), SIGKILL what is left after `grace_s`."""
    if process.poll() is None:
        kill_process_group(process.pid, grace_s, reap=process.poll)


def follow_records(lines: Iterable[str], log: Callable[[str], None]) -> dict:
    """Logs rank 0's output lines and returns the fields of its JSON records, the later ones winning. A line that
    only looks like one (a library's printout, a record cut short by a kill) is logged, not parsed: it must not stop
    a healthy training."""
    last: dict = {}
    for line in lines:
        log(line.rstrip())
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            last.update({key: value for key, value in record.items() if key != "event"})
    return last

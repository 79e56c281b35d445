"""Dask over TLS: the Dask configuration that points a process at the certificates `sluice secrets` made, and the
check that a process about to reach a tls:// scheduler has them.

Dask reads its TLS settings from its own configuration (`distributed.comm.tls.*`, here as DASK_* environment
variables, or a dask YAML file); every `Client` made without an explicit `security` (Prefect's DaskTaskRunner,
the training nodes' client) builds its `Security` from it, so the flows need no TLS code of their own.
"""
from __future__ import annotations

import os
from pathlib import Path

# The certificates' file names in the folder `sluice secrets` makes (services/cluster_secrets.py)
CA_CERT, CA_KEY = "ca.pem", "ca-key.pem"
SCHEDULER_CERT, SCHEDULER_KEY = "scheduler.pem", "scheduler-key.pem"
NODE_CERT, NODE_KEY = "node.pem", "node-key.pem"
CA_FILE_ENV = "DASK_DISTRIBUTED__COMM__TLS__CA_FILE"
# Workers open clients too (a task that reaches the scheduler): the node certificate serves both roles.
NODE_ENV = {"DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": NODE_CERT,
            "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": NODE_KEY,
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": NODE_CERT,
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": NODE_KEY}
SCHEDULER_ENV = {"DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__CERT": SCHEDULER_CERT,
                 "DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__KEY": SCHEDULER_KEY}
# For the scheduler and workers: they listen on tls:// and refuse plain TCP. Not for clients, whose recipes may
# still start a plain LocalCluster of their own.
REQUIRE_ENCRYPTION_ENV = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
# What a client needs, as Dask's configuration keys, with the variable that sets each.
CLIENT_KEYS = {"distributed.comm.tls.ca-file": CA_FILE_ENV,
               "distributed.comm.tls.client.cert": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
               "distributed.comm.tls.client.key": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY"}


def tls_files(role: str) -> dict[str, str]:
    """The CA and the certificate with its key that Dask's configuration gives this process in `role` ("client",
    "worker"): what other connections of the cluster (the training's MLflow writer) secure themselves with."""
    import dask

    return {"ca_file": dask.config.get("distributed.comm.tls.ca-file"),
            "cert": dask.config.get(f"distributed.comm.tls.{role}.cert"),
            "key": dask.config.get(f"distributed.comm.tls.{role}.key")}


def tls_env(certs: Path, scheduler: bool = False) -> dict[str, str]:
    """The DASK_* variables of a node (worker or client) whose certificates are in `certs`; with `scheduler`, also
    the scheduler's certificate."""
    files = {CA_FILE_ENV: CA_CERT} | NODE_ENV | (SCHEDULER_ENV if scheduler else {})
    return {variable: str(certs.resolve() / name) for variable, name in files.items()}


def client_tls_problems(address: str | None, field: str) -> list[str]:
    """What keeps this process from connecting to `address` over TLS (nothing unless it is a tls:// address)."""
    if not address or not address.startswith("tls://"):
        return []
    import dask

    missing = [variable for key, variable in CLIENT_KEYS.items() if not dask.config.get(key, None)]
    if missing:
        return [f"{field}: {address} is a TLS scheduler and this machine has no certificate for it: set "
                f"{', '.join(missing)} to the {CA_CERT}, {NODE_CERT} and {NODE_KEY} that `sluice secrets` made (docs/"
                f"operations.md, 'Multi-host mode')"]
    return [f"{field}: {address}: {key} is {dask.config.get(key)}, which does not exist: copy the file there, or "
            f"point {variable} at it"
            for key, variable in CLIENT_KEYS.items() if not os.path.exists(dask.config.get(key))]

"""`sluice server`, `sluice secrets`, `sluice corpus` and `sluice recipe-reference`."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def server(args) -> int:
    from services.server import ServerOptions, run_server
    from storage.locations import state_dir

    return run_server(ServerOptions(
        host=args.host, prefect_port=args.prefect_port, mlflow_port=args.mlflow_port, dask_workers=args.dask_workers,
        dask_port=args.dask_port, dask_dashboard_port=args.dask_dashboard_port,
        deployments=str(Path(args.deployments).resolve()) if args.deployments else None,
        backend_store_uri=args.backend_store_uri, state=state_dir() / "server", multi_host=args.multi_host,
        certs=args.certs))


def secrets(args) -> int:
    from flows.dask_tls import CA_CERT, CA_KEY, NODE_CERT, NODE_KEY, SCHEDULER_KEY
    from services.cluster_secrets import (CREDENTIALS, WEB_CERT, WEB_KEY, SecretsExist, certificate_names,
                                         make_cluster_secrets)

    if args.days < 1:
        print(f"sluice secrets: --days {args.days}: give 1 or more", file=sys.stderr)
        return 2
    try:
        written = make_cluster_secrets(args.folder, args.days, args.hosts, args.force)
    except (SecretsExist, OSError) as error:
        print(f"sluice secrets: {error}", file=sys.stderr)
        return 2
    print(f"made in {args.folder}: {', '.join(path.name for path in written)} (certificates valid {args.days} days)")
    print(f"  {WEB_CERT}, Prefect's and MLflow's, is valid for {', '.join(certificate_names(args.folder / WEB_CERT))}"
          f" (--host adds an address)")
    print(f"  {CA_KEY} signs certificates, {SCHEDULER_KEY} and {WEB_KEY} are the server's: keep them on this machine; "
          f"every other machine gets {CA_CERT}, {NODE_CERT}, {NODE_KEY} and {CREDENTIALS}")
    print(f"  load the credentials before `sluice server --multi-host --certs {args.folder}`, and on every client: "
          f"set -a; . {args.folder / CREDENTIALS}; set +a")
    return 0


def corpus(args) -> int:
    from dev.corpus.generate import generate_corpus

    summary = generate_corpus(args.out, size=args.size, seed=args.seed, data_dir=args.data_dir)
    print(json.dumps(summary.get("counts", summary), indent=2))
    print(f"corpus written to {args.out}")
    return 0


def recipe_reference(args) -> int:
    from configs.reference import reference_markdown

    print(reference_markdown(), end="")
    return 0

"""The long-running services and what reaching them safely takes: `sluice server`'s supervisor (Prefect, MLflow,
Dask, the deployments), the temporary Prefect server a command starts, multi-host authentication and the cluster's
certificates and credentials (`sluice secrets`). Above flows/: they start processes that run the flows."""

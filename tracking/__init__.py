"""MLflow as its own layer, below both `flows/` and `training/`: where the tracking store is (`store`), how a config
becomes run params (`params`), and the trainer's rank-0 run logger (`run_logger`), which logs through a run writer
(`mlflow_writer`) hosted by the launching flow or in rank 0 itself. Nothing here imports `flows/`, and mlflow
itself is imported only inside the functions that talk to it, so a training rank that does not log never loads it
(torchtitan's `components/metrics.py` draws the same line)."""

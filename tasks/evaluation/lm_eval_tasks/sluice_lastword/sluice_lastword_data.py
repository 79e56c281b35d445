"""The `custom_dataset` of sluice_lastword.yaml: lm-evaluation-harness imports this file by its path and calls
`load` with the task's metadata; the items are made at run time (nothing is written or downloaded)."""
from __future__ import annotations


def load(**metadata):
    import datasets

    from storage.locations import shared_data_dir
    from tasks.evaluation.lastword import lastword_items

    data_dir = metadata.get("data_dir") or shared_data_dir()
    return {"test": datasets.Dataset.from_list(lastword_items(data_dir))}

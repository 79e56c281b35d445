"""`sluice export MODEL_URI OUT_DIR`: a logged model (flows/logged_model.py) as a Hugging Face checkpoint that
`transformers` loads with no custom code: Qwen3 weights and config (training/hf_export.py) and the SentencePiece
model as a fast tokenizer (tasks/tokenize/hf_tokenizer.py). When the model came from a run, the checkpoint is
also logged as that run's artifacts, under `huggingface/`."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import mlflow

from flows.logged_model import load_language_model
from tasks.tokenize.hf_tokenizer import save_hf_tokenizer
from training.hf_export import SpecialTokenIds, save_qwen3

ARTIFACT_PATH = "huggingface"


def export_hf_checkpoint(model_uri: str, out_dir: str | Path, log_to_run: bool = True) -> dict:
    """Write the checkpoint into `out_dir`; returns it with the source run and the artifacts' URI (None if the
    model has no run, or `log_to_run` is off: `sluice eval`'s working copy). Raises `ModelNotExportable` or
    `TokenizerNotConvertible` naming a setting it cannot map."""
    loaded = load_language_model(model_uri)
    processor = loaded.tokenizer
    special = SpecialTokenIds(*(_piece_id(index) for index in (processor.bos_id(), processor.eos_id(),
                                                                processor.pad_id())))
    run_id = source_run_id(model_uri)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # staged: a refusal leaves no half-written checkpoint, and only the checkpoint's files reach the run
    with tempfile.TemporaryDirectory(dir=out) as staging:
        save_hf_tokenizer(processor.serialized_model_proto(), staging, model_max_length=loaded.model.config.seq_len)
        save_qwen3(loaded.model, staging, special)
        if run_id and log_to_run:
            mlflow.MlflowClient().log_artifacts(run_id, staging, ARTIFACT_PATH)
        for written in Path(staging).iterdir():
            shutil.move(written, out / written.name)
    return {"out_dir": str(out), "run_id": run_id,
            "artifact_uri": f"runs:/{run_id}/{ARTIFACT_PATH}" if run_id and log_to_run else None}


def source_run_id(model_uri: str) -> str | None:
    """The run a model URI's model was logged from (`models:/<model id>`, a registered `models:/<name>/<version>`
    or `@alias`), or None for a model logged outside a run."""
    info = mlflow.models.get_model_info(model_uri)
    if info.run_id:
        return info.run_id
    return mlflow.get_logged_model(info.model_id).source_run_id if info.model_id else None


def _piece_id(index: int) -> int | None:
    return index if index >= 0 else None

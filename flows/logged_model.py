"""A trained model as an MLflow logged model: the final checkpoint's weights in one file, the tokenizer and the
model config, behind a pyfunc that continues prompts. `sluice sample MODEL_URI "prompt"` loads it by URI, and so
can any evaluation (`load_language_model(uri)` gives the torch module and the tokenizer).

The flows log it after training (a training rank never imports MLflow); the CLI and evaluations load it.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import mlflow
import pandas as pd
import torch

from training.checkpoint import checkpoint_step
from training.consolidated import checkpoint_model_config, consolidated_weights
from training.model import Transformer
from training.shapes import ModelConfig

WEIGHTS_FILE = "weights.pt"
CONFIG_FILE = "model_config.json"
LOGGED_MODEL_NAME = "model"
ENTRY = Path(__file__).with_name("logged_model_entry.py")      # the pyfunc as code, not a pickled object


class SluiceLanguageModel(mlflow.pyfunc.PythonModel):
    """Prompts in, continuations out. Params: `new_tokens` (default 32), `temperature` (0 = greedy), `seed`."""

    def load_context(self, context) -> None:
        import sentencepiece as spm

        with open(context.artifacts["model_config"]) as handle:
            self.model = Transformer(ModelConfig(**json.load(handle)))
        self.model.load_state_dict(torch.load(context.artifacts["weights"], weights_only=True))
        self.model.eval()
        self.tokenizer = spm.SentencePieceProcessor(model_file=context.artifacts["tokenizer"])

    # A DataFrame hint, the input the pyfunc's string-column signature hands over: MLflow warns on a `predict`
    # without hints, and infers no signature from this one, so the params schema (`new_tokens`, `temperature`,
    # `seed`) given explicitly in `_signature` stays.
    @torch.no_grad()
    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> list[str]:
        prompts = list(model_input.iloc[:, 0]) if hasattr(model_input, "iloc") else list(model_input)
        params = params or {}
        generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
        continuations = []
        for prompt in prompts:
            ids = torch.tensor([self.tokenizer.encode(str(prompt))])
            out = self.model.generate(ids, int(params.get("new_tokens", 32)), float(params.get("temperature", 0.0)),
                                      generator)
            continuations.append(continuation_text(self.tokenizer, ids[0].tolist(), out[0].tolist()))
        return continuations


def continuation_text(tokenizer, prompt_ids: list[int], all_ids: list[int]) -> str:
    """The text the model added after the prompt. Decoded with the prompt, then cut after it: SentencePiece drops a
    sequence's leading space, so the continuation decoded alone would lose the space before its first word."""
    whole, prompt = tokenizer.decode(all_ids), tokenizer.decode(prompt_ids)
    if whole.startswith(prompt):
        return whole[len(prompt):]
    return tokenizer.decode(all_ids[len(prompt_ids):])    # a byte piece spanning the boundary: no common prefix


def _signature():
    from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema
    from mlflow.models import ModelSignature

    return ModelSignature(inputs=Schema([ColSpec("string")]), outputs=Schema([ColSpec("string")]),
                          params=ParamSchema([ParamSpec("new_tokens", "long", 32),
                                              ParamSpec("temperature", "double", 0.0), ParamSpec("seed", "long", 0)]))


def log_language_model(client: mlflow.MlflowClient, run_id: str, checkpoint: str, tokenizer_path: str,
                       tags: dict[str, str], registered_name: str | None = None) -> str:
    """Log the checkpoint as the run's logged model (and register it when a name is given); returns its URI."""
    import sentencepiece

    experiment_id = client.get_run(run_id).info.experiment_id
    model = mlflow.initialize_logged_model(name=LOGGED_MODEL_NAME, source_run_id=run_id, tags=tags,
                                           experiment_id=experiment_id, model_type="language-model")
    with tempfile.TemporaryDirectory() as folder:
        config_path = os.path.join(folder, CONFIG_FILE)
        with open(config_path, "w") as handle:
            json.dump(checkpoint_model_config(checkpoint).to_dict(), handle, indent=2)
        artifacts = {"weights": consolidated_weights(checkpoint, os.path.join(folder, WEIGHTS_FILE)),
                     "tokenizer": tokenizer_path, "model_config": config_path}
        mlflow.pyfunc.log_model(python_model=str(ENTRY), artifacts=artifacts, signature=_signature(),
                                input_example=["The"],
                                pip_requirements=[f"torch=={torch.__version__.split('+')[0]}",
                                                  f"sentencepiece=={sentencepiece.__version__}"],
                                model_id=model.model_id)
    from mlflow.entities import LoggedModelOutput

    # The run's page lists the models it produced from its outputs (mlflow.log_model does this inside a run).
    client.log_outputs(run_id, [LoggedModelOutput(model.model_id, checkpoint_step(checkpoint))])
    if registered_name:
        mlflow.register_model(f"models:/{model.model_id}", registered_name, tags=tags)
    return f"models:/{model.model_id}"


def load_language_model(model_uri: str) -> SluiceLanguageModel:
    """The logged model's pyfunc object: `.predict(prompts)`, or `.model` (torch) and `.tokenizer` for evaluation."""
    return mlflow.pyfunc.load_model(model_uri).unwrap_python_model()

"""A tiny language model trained and logged to MLflow as training logs it, for the tests of what a logged model is
used for (`sluice export`, `sluice eval`): real web pages in 15 languages extracted by the pipeline, a tokenizer
trained by the tokenizer stage's code, a checkpoint saved by the trainer's. conftest.py makes them session
fixtures (`pages`, `split_pages`, `logged_model`), so the model is trained once per test session."""
from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path

import sentencepiece as spm
import torch
import torch.distributed as dist
from document_shards import document, write_shards     # tests/document_shards.py (pytest puts tests/ on the path)

from configs.html import HtmlTextConfig
from configs.tokenizer import EOS_ID, TokenizerConfig
from dev.gold_pages import decode
from tasks.extract.html_text import html_to_text
from tasks.tokenize.train import train_tokenizer
from training.checkpoint import save_checkpoint
from training.model import Transformer
from training.shapes import ModelConfig

TINY = dict(seq_len=64, n_layers=2, d_model=64, n_heads=4, ffn_multiple=32)
TRAINING_STEPS = 150


@contextlib.contextmanager
def one_thread():
    """Matrices this small gain nothing from a second thread, and lose 10x to a core that is busy elsewhere."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def web_pages(data_dir: Path) -> list[tuple[str, str]]:
    """(language, text) of real web pages in 15 languages and 9 scripts (trafilatura's gold set), extracted by
    the pipeline's own HTML-to-text: two pages per language at most."""
    folder = data_dir / "html" / "trafilatura_eval"
    chosen, per_language = [], {}
    for entry in map(json.loads, (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines()):
        lang = entry["fasttext_lid176"]
        if lang and per_language.get(lang, 0) < 2:
            text = html_to_text(decode(gzip.decompress((folder / entry["file"]).read_bytes())), HtmlTextConfig())
            if len(text) > 500:
                per_language[lang] = per_language.get(lang, 0) + 1
                chosen.append((lang, text))
    return chosen


def split_web_pages(pages: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[str]]:
    """Training pages: the first page of each language that has two. Held-out lines: every other page, so
    Arabic, Japanese, Cyrillic and Bengali text is never trained on (byte fallback)."""
    seen, training, heldout = set(), [], []
    for lang, text in pages:
        if lang not in seen and sum(other == lang for other, _ in pages) > 1:
            seen.add(lang)
            training.append((lang, text))
        else:
            heldout += [line for line in text.split("\n") if line.strip()]
    return training, heldout


def train_sentencepiece(folder: Path, training: list[tuple[str, str]], config: TokenizerConfig) -> str:
    """A tokenizer trained by the tokenizer stage's code on the pages; its model file."""
    urls = write_shards(folder, [[document(index, text, lang) for index, (lang, text) in enumerate(training)]])
    return train_tokenizer(urls, str(folder / "tokenizer.model"), config)["model"]


def train_tiny_model(training: list[tuple[str, str]], tokenizer: str, steps: int = TRAINING_STEPS):
    """A TINY model trained for `steps` on the pages' tokens (documents ended by EOS, as token shards are), and its
    optimizer and last loss. `steps=0`: the seeded initialisation, untrained."""
    processor = spm.SentencePieceProcessor(model_file=tokenizer)
    tokens = torch.tensor([token for _, text in training for token in processor.encode(text) + [EOS_ID]])
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=processor.get_piece_size(), **TINY))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss = torch.tensor(float("nan"))
    with one_thread():
        for _ in range(steps):
            starts = torch.randint(0, len(tokens) - model.config.seq_len - 1, (16,))
            batch = torch.stack([tokens[start:start + model.config.seq_len + 1] for start in starts])
            loss = torch.nn.functional.cross_entropy(model(batch[:, :-1]).flatten(0, 1), batch[:, 1:].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model, optimizer, loss.item()


def log_tiny_model(folder: Path, model, optimizer, tokenizer: str, step: int, experiment: str) -> dict:
    """The model saved by the trainer's checkpoint code and logged as training logs it, from a new run of
    `experiment`: its `uri`, `run_id` and `checkpoint`."""
    import mlflow

    from flows.logged_model import log_language_model

    dist.init_process_group("gloo", init_method=f"file://{folder / 'rendezvous'}", rank=0, world_size=1)
    try:
        checkpoint = save_checkpoint(str(folder / "checkpoints"), step, model, optimizer, {}, rank=0,
                                     layout={"pipeline_parallel": 1, "data_parallel": 1, "tensor_parallel": 1})
    finally:
        dist.destroy_process_group()
    client = mlflow.MlflowClient()
    experiment_id = mlflow.set_experiment(experiment).experiment_id
    run_id = client.create_run(experiment_id).info.run_id
    uri = log_language_model(client, run_id, checkpoint, tokenizer, tags={})
    client.set_terminated(run_id)
    return {"uri": uri, "run_id": run_id, "checkpoint": checkpoint}

"""Exact bits per byte on the evaluation suite: the summed next-token negative log-likelihood of every token of
each raw text, divided by ln 2 and by the text's UTF-8 byte count.

Each document is tokenized alone and starts conditioned on EOS: the sequence is [EOS, t1, ..., tn]. It is cut
into windows of `seq_len` inputs at a stride of `seq_len`, so every token t1..tn is predicted exactly once (the
last window is shorter and right-padded; padded targets are ignored). Ranks split the windows and sum their
losses, so the figure does not depend on the number of ranks. Per domain, and macro-averaged over domains.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

IGNORE = -100


@dataclass(frozen=True)
class Window:
    domain: int
    inputs: np.ndarray      # int64, length <= seq_len
    targets: np.ndarray     # same length


@dataclass
class SuiteTokens:
    domains: list[str]
    bytes: list[int]             # UTF-8 bytes of each domain's raw text
    windows: list[Window]

    @classmethod
    def from_documents(cls, documents: list[dict], encode, eos_id: int, seq_len: int) -> "SuiteTokens":
        """`documents`: {domain, text}; `encode`: text -> token ids (no BOS or EOS added)."""
        domains = sorted({doc["domain"] for doc in documents})
        index = {name: position for position, name in enumerate(domains)}
        sizes = [0] * len(domains)
        windows: list[Window] = []
        for doc in documents:
            sizes[index[doc["domain"]]] += len(doc["text"].encode("utf-8"))
            windows += document_windows(index[doc["domain"]], encode(doc["text"]), eos_id, seq_len)
        return cls(domains, sizes, windows)


def load_suite(path: str, tokenizer_path: str, eos_id: int, seq_len: int) -> SuiteTokens:
    """The suite file (one JSON document per line: domain, name, text) tokenized with the run's tokenizer."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=tokenizer_path)
    with open(path, encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle if line.strip()]
    return SuiteTokens.from_documents(documents, processor.encode, eos_id, seq_len)


def document_windows(domain: int, ids: list[int], eos_id: int, seq_len: int) -> list[Window]:
    sequence = np.array([eos_id, *ids], dtype=np.int64)
    return [Window(domain, sequence[start:start + seq_len], sequence[start + 1:start + seq_len + 1])
            for start in range(0, sequence.size - 1, seq_len)]


@torch.no_grad()
def suite_nll(window_nll: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], suite: SuiteTokens, seq_len: int,
              batch_size: int, rank: int, world_size: int, device: torch.device, group=None) -> np.ndarray:
    """Summed NLL (nats) per domain over every rank. `window_nll(inputs, targets)`: each row's summed NLL
    (`model_window_nll`, or a pipeline's). Every rank must call this (the model may be sharded): each takes windows
    rank, rank + W, ... and runs the same number of batches, the last ones padded. `rank` and `world_size` count
    replicas, whose process `group` the sums are reduced over (the tensor-parallel ranks of a replica read the same
    windows)."""
    mine = suite.windows[rank::world_size]
    batches = math.ceil(math.ceil(len(suite.windows) / world_size) / batch_size)
    totals = torch.zeros(len(suite.domains), dtype=torch.float64, device=device)
    for batch in range(batches):
        chunk = mine[batch * batch_size:(batch + 1) * batch_size]
        inputs = torch.zeros((batch_size, seq_len), dtype=torch.long)
        targets = torch.full((batch_size, seq_len), IGNORE, dtype=torch.long)
        for row, window in enumerate(chunk):
            inputs[row, :window.inputs.size] = torch.from_numpy(window.inputs)
            targets[row, :window.targets.size] = torch.from_numpy(window.targets)
        losses = window_nll(inputs.to(device), targets.to(device))
        for row, window in enumerate(chunk):
            totals[window.domain] += losses[row]
    if world_size > 1:
        dist.all_reduce(totals, op=dist.ReduceOp.SUM, group=group)
    return totals.cpu().numpy()


def model_window_nll(model) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Each row's summed NLL from the model's logits."""
    return lambda inputs, targets: window_nll(model(inputs), targets)


def window_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Each row's summed NLL (float64) of logits (batch, time, vocab) against targets, padding (IGNORE) left out."""
    losses = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="none")
    return losses.view(targets.shape).sum(dim=1).double()


def bits_per_byte_by_domain(nll: np.ndarray, suite: SuiteTokens) -> dict[str, float]:
    """{domain: bpb} plus `macro`, the unweighted mean over domains."""
    values = {name: float(total) / math.log(2) / size for name, total, size in zip(suite.domains, nll, suite.bytes)}
    return values | {"macro": float(np.mean(list(values.values())))}

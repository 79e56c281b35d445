"""The trainer's data: fixed-length token sequences from memory-mapped token shards, shuffled by a seed, split
across data-parallel ranks without overlap, with a position that can be saved and restored.

The token stream of each shard (documents already separated by EOS) is cut into windows of `seq_len + 1`
tokens at a stride of `seq_len`: a window gives the inputs (its first `seq_len` tokens) and the targets (its
last `seq_len`). Windows never cross shards, so a shard contributes (tokens - 1) // seq_len of them; documents
shorter or longer than a sequence are both fine. Every epoch visits every window once, in an order drawn from
(seed, epoch); rank r of W takes positions r, r + W, r + 2W, ... of that order, and every rank gets the same
number of windows (the last `windows % W` of an epoch are left out), so ranks step in lockstep.

Two orders (`data.order`):
- `shuffle`: a permutation of all the windows. Two runs on different shards get unrelated orders, even where
  their tokens are mostly the same.
- `stream`: the shards' own order (a mixture's stream is already a seeded shuffle of its pieces), with the
  windows shuffled only within consecutive blocks of `block` windows, so a batch mixes several pieces. A piece
  that two mixtures share sits at about the same place in both streams, so two runs see it at about the same
  step: this couples an ablation's arms, and their paired difference loses the batch order's noise.

The position is (epoch, step): `state_dict()` returns it with what it depends on, and `load_state_dict()`
refuses a state from other shards, another seed or sequence length. A restored reader continues exactly where the
saved one was, however many times it is saved and restored. A position saved by another number of ranks (a run
resumed under another layout) is the same windows consumed (step x ranks, the ranks being in lockstep), dealt out
anew: the ranks go on with the same windows of the epoch's order, and an update with the same number of sequences
reads the same ones. Only the windows an epoch leaves out at its end (its last `windows % W`) follow the new layout.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from storage.token_shard import TokenShard


class TokenSequences:
    def __init__(self, shard_paths: list[str | Path], seq_len: int, seed: int, rank: int = 0, world_size: int = 1,
                 order: str = "shuffle", block: int = 64):
        if seq_len < 1:
            raise ValueError(f"seq_len must be at least 1, got {seq_len}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        if not shard_paths:
            raise ValueError("no token shards given")
        if order not in ("shuffle", "stream") or block < 1:
            raise ValueError(f"order must be shuffle or stream and block at least 1, got {order!r}, {block}")
        self._paths = [str(path) for path in shard_paths]
        self.shards = [TokenShard(path) for path in shard_paths]  # validates each header against its sizes
        self.seq_len, self.seed, self.rank, self.world_size = seq_len, seed, rank, world_size
        self.order, self.block = order, block
        per_shard = np.array([max(shard.num_tokens - 1, 0) // seq_len for shard in self.shards], dtype=np.int64)
        self._first_window = np.concatenate([[0], np.cumsum(per_shard)])
        self.windows_per_rank = int(self._first_window[-1]) // world_size
        if self.windows_per_rank == 0:
            raise ValueError(f"{int(self._first_window[-1])} windows of {seq_len + 1} tokens in "
                             f"{sum(s.num_tokens for s in self.shards)} tokens cannot give each of {world_size} "
                             f"ranks one sequence: use a shorter seq_len or more data")
        self._identity = self._shards_identity(shard_paths, self.shards)
        self.epoch, self.step = 0, 0
        self._order_epoch, self._order = -1, np.empty(0, np.int64)

    def check_vocabulary(self, vocab_size: int) -> None:
        """Every token id must index the model's embedding: an id >= vocab_size is an error naming its shard."""
        for path, shard in zip(self._paths, self.shards):
            if shard.num_tokens and (largest := int(np.asarray(shard.tokens).max())) >= vocab_size:
                raise ValueError(f"token shard {path} holds token id {largest}, outside the model's vocabulary of "
                                 f"{vocab_size}: set model.vocab_size to the tokenizer's size")

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """(inputs, targets), each (batch_size, seq_len) int64; moves the position on by batch_size."""
        windows = [self._next_window() for _ in range(batch_size)]
        stacked = np.stack(windows).astype(np.int64)
        return stacked[:, :-1], stacked[:, 1:]

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "step": self.step, "seed": self.seed, "seq_len": self.seq_len,
                "rank": self.rank, "world_size": self.world_size, "shards": self._identity,
                "order": self.order, "block": self.block}

    def load_state_dict(self, state: dict) -> None:
        expected = self.state_dict()
        for key in ("seed", "seq_len", "shards", "order", "block"):
            if state[key] != expected[key]:
                raise ValueError(f"data position saved with {key}={state[key]!r}, this reader has "
                                 f"{expected[key]!r}: it would not continue the same sequence")
        saved_ranks, saved_step = int(state["world_size"]), int(state["step"])
        saved_per_rank = int(self._first_window[-1]) // saved_ranks
        if not 0 <= saved_step <= saved_per_rank:
            raise ValueError(f"saved step {saved_step} is outside a rank's {saved_per_rank} windows")
        self.epoch, self.step = int(state["epoch"]), self._dealt_out(saved_step, saved_ranks, saved_per_rank)

    def _dealt_out(self, saved_step: int, saved_ranks: int, saved_per_rank: int) -> int:
        """This rank's step for the windows `saved_ranks` ranks had consumed at `saved_step` each."""
        if saved_step == saved_per_rank:          # the epoch was done: the next read starts the next one
            return self.windows_per_rank
        consumed = saved_step * saved_ranks
        if consumed % self.world_size or consumed // self.world_size > self.windows_per_rank:
            raise ValueError(f"the data position of {saved_ranks} replicas after {saved_step} sequences each "
                             f"({consumed} in all) cannot be dealt out to {self.world_size} replicas: resume with a "
                             f"number of replicas that divides {consumed}")
        return consumed // self.world_size

    def _next_window(self) -> np.ndarray:
        if self.step == self.windows_per_rank:
            self.epoch, self.step = self.epoch + 1, 0
        window = int(self._epoch_order()[self.rank + self.step * self.world_size])
        self.step += 1
        shard = int(np.searchsorted(self._first_window, window, side="right")) - 1
        start = (window - int(self._first_window[shard])) * self.seq_len
        return np.asarray(self.shards[shard].tokens[start:start + self.seq_len + 1])

    def _epoch_order(self) -> np.ndarray:
        if self._order_epoch != self.epoch:
            rng = np.random.default_rng([self.seed, self.epoch])
            windows = int(self._first_window[-1])
            if self.order == "shuffle":
                self._order = rng.permutation(windows)
            else:   # by block, then by a random key within the block
                self._order = np.lexsort((rng.random(windows), np.arange(windows) // self.block))
            self._order_epoch = self.epoch
        return self._order

    @staticmethod
    def _shards_identity(shard_paths: list[str | Path], shards: list[TokenShard]) -> str:
        """Which shards, in which order, with how many tokens: a restored position means the same windows."""
        digest = hashlib.sha256()
        for path, shard in zip(shard_paths, shards):
            digest.update(f"{Path(path).name}:{shard.num_tokens}:{len(shard)}\n".encode())
        return digest.hexdigest()[:16]

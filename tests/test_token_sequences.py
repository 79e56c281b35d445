"""The trainer's reader over token shards: deterministic for a seed, resumable (twice in a row), split across
ranks without overlap, and strict about damaged shards and impossible settings."""
from __future__ import annotations

import json

import numpy as np
import pytest

import torch

from storage.token_shard import TokenShardWriter
from training.device_batches import DeviceBatches
from training.sequences import TokenSequences

SEQ = 16


@pytest.fixture()
def shards(tmp_path) -> list[str]:
    """Three shards of documents of varied lengths; token t of the corpus stream has the value t % 50000, so
    every window's tokens name where it came from."""
    rng = np.random.default_rng(3)
    paths, next_token = [], 0
    for index in range(3):
        writer = TokenShardWriter(tmp_path / f"train.{index:05d}", vocab_size=50_000)
        for length in rng.integers(1, 3 * SEQ, size=40):  # shorter and longer than a sequence
            writer.add_document(np.arange(next_token, next_token + length) % 50_000)
            next_token += int(length)
        writer.close()
        paths.append(str(tmp_path / f"train.{index:05d}"))
    return paths


def batches(reader: TokenSequences, count: int, size: int = 4) -> list[np.ndarray]:
    return [reader.next_batch(size)[0] for _ in range(count)]


def test_inputs_and_targets_are_one_token_apart(shards):
    inputs, targets = TokenSequences(shards, SEQ, seed=0).next_batch(8)
    assert inputs.shape == targets.shape == (8, SEQ)
    assert (inputs[:, 1:] == targets[:, :-1]).all()
    assert ((targets - inputs) % 50_000 == 1).all()  # consecutive tokens of the stream


def test_same_seed_same_sequences_other_seed_other_order(shards):
    first = batches(TokenSequences(shards, SEQ, seed=7), 5)
    again = batches(TokenSequences(shards, SEQ, seed=7), 5)
    other = batches(TokenSequences(shards, SEQ, seed=8), 5)
    assert all((a == b).all() for a, b in zip(first, again))
    assert not all((a == b).all() for a, b in zip(first, other))


def test_an_epoch_visits_every_window_once(shards):
    reader = TokenSequences(shards, SEQ, seed=1)
    starts = [int(row[0]) for _ in range(reader.windows_per_rank) for row in reader.next_batch(1)[0]]
    assert len(set(starts)) == reader.windows_per_rank
    assert reader.epoch == 0
    reader.next_batch(1)
    assert reader.epoch == 1 and reader.step == 1


def test_two_resumes_in_a_row_continue_the_same_sequence(shards):
    """Interrupted twice (once across an epoch boundary), through JSON as a checkpoint would store it."""
    reference = TokenSequences(shards, SEQ, seed=5)
    steps = reference.windows_per_rank // 12 + 1         # 3 x steps batches of 4 cross into the next epoch
    expected = batches(reference, 3 * steps)
    got, state = [], None
    for _ in range(3):
        reader = TokenSequences(shards, SEQ, seed=5)
        if state is not None:
            reader.load_state_dict(json.loads(state))
        got += batches(reader, steps)
        state = json.dumps(reader.state_dict())
    assert json.loads(state)["epoch"] == 1
    assert all((a == b).all() for a, b in zip(expected, got))


@pytest.mark.parametrize("background", [True, False])
def test_the_read_ahead_loader_gives_the_plain_readers_batches_in_order_across_resumes(shards, background):
    """The loader reads one batch ahead (in a thread, as on a GPU), so its saved position is not its reader's:
    resumed twice, once with a batch waiting and once from a fresh loader, it still gives exactly the plain reader's
    batches, past an epoch; and so does the loader that reads when a batch is taken (on CPU)."""
    plain = batches(TokenSequences(shards, SEQ, seed=5), 80)
    loader = DeviceBatches(TokenSequences(shards, SEQ, seed=5), 4, torch.device("cpu"), background=background)
    taken = [loader.next_batch()[0].numpy() for _ in range(30)]
    if background:
        loader._ahead.result()              # the next batch read, as it is by the time a step ends
    saved = loader.state_dict()
    taken += [loader.next_batch()[0].numpy() for _ in range(5)]         # taken, then undone by the resume
    loader.load_state_dict(saved)
    taken = taken[:30] + [loader.next_batch()[0].numpy() for _ in range(20)]
    saved = json.loads(json.dumps(loader.state_dict()))
    fresh = DeviceBatches(TokenSequences(shards, SEQ, seed=5), 4, torch.device("cpu"), background=background)
    fresh.load_state_dict(saved)
    taken += [fresh.next_batch()[0].numpy() for _ in range(30)]
    assert TokenSequences(shards, SEQ, seed=5).windows_per_rank < 80 * 4       # an epoch boundary was crossed
    assert len(taken) == 80 and all((a == b).all() for a, b in zip(taken, plain))
    inputs, targets = fresh.next_batch()
    assert inputs.dtype == targets.dtype == torch.int64 and (inputs[:, 1:] == targets[:, :-1]).all()


def test_ranks_share_out_an_epoch_without_overlap(shards):
    world = 3
    readers = [TokenSequences(shards, SEQ, seed=2, rank=rank, world_size=world) for rank in range(world)]
    per_rank = [{int(row[0]) for row in readers[rank].next_batch(readers[rank].windows_per_rank)[0]}
                for rank in range(world)]
    single = TokenSequences(shards, SEQ, seed=2)
    assert all(len(starts) == single.windows_per_rank // world for starts in per_rank)
    assert not (per_rank[0] & per_rank[1]) and not (per_rank[0] & per_rank[2]) and not (per_rank[1] & per_rank[2])


def test_a_position_from_another_number_of_ranks_goes_on_with_the_same_windows(shards):
    """Two ranks read 3 batches of 2: 12 windows of the epoch's order consumed. Four ranks resumed from rank 0's
    position take the next 8 between them, each its own share, as one rank would have read them in turn."""
    pair = [TokenSequences(shards, SEQ, seed=2, rank=rank, world_size=2) for rank in range(2)]
    for reader in pair:
        for _ in range(3):
            reader.next_batch(2)
    single = TokenSequences(shards, SEQ, seed=2)
    single.next_batch(12)
    following = single.next_batch(8)[0]
    for rank in range(4):
        quarter = TokenSequences(shards, SEQ, seed=2, rank=rank, world_size=4)
        quarter.load_state_dict(pair[0].state_dict())
        assert (quarter.next_batch(2)[0] == following[[rank, rank + 4]]).all()
    odd = TokenSequences(shards, SEQ, seed=2, rank=0, world_size=2)
    odd.next_batch(3)
    with pytest.raises(ValueError, match=r"2 replicas after 3 sequences each \(6 in all\) cannot be dealt out to 4"):
        TokenSequences(shards, SEQ, seed=2, rank=0, world_size=4).load_state_dict(odd.state_dict())
    with pytest.raises(ValueError, match="shards"):
        TokenSequences(shards[:2], SEQ, seed=2, rank=0, world_size=2).load_state_dict(pair[0].state_dict())


def test_a_sequence_longer_than_the_data_is_a_clear_error(shards):
    with pytest.raises(ValueError, match="shorter seq_len or more data"):
        TokenSequences(shards, 1_000_000, seed=0)


def test_a_truncated_shard_is_detected_from_its_header(shards):
    path = f"{shards[1]}.bin"
    with open(path, "r+b") as handle:
        handle.truncate(handle.seek(0, 2) - 2)
    with pytest.raises(ValueError, match="header promises"):
        TokenSequences(shards, SEQ, seed=0)


def test_stream_order_keeps_the_shards_order_up_to_a_block_and_resumes(shards):
    """Each window is read within its block of 8 (so a step's windows are near each other in the stream), every
    window once per epoch, and a restored reader continues the sequence; a reader of the other order refuses it."""
    reader = TokenSequences(shards, SEQ, seed=2, order="stream", block=8)
    starts = [int(reader.next_batch(1)[0][0, 0]) for _ in range(reader.windows_per_rank)]
    stream = sorted(starts)                                   # the tokens grow along the stream
    positions = [stream.index(start) for start in starts]
    assert sorted(positions) == list(range(len(starts)))
    assert all(step // 8 == position // 8 for step, position in enumerate(positions))
    assert positions != sorted(positions)                     # shuffled within the blocks
    expected = batches(TokenSequences(shards, SEQ, seed=2, order="stream", block=8), 6)
    first = TokenSequences(shards, SEQ, seed=2, order="stream", block=8)
    got = batches(first, 3)
    second = TokenSequences(shards, SEQ, seed=2, order="stream", block=8)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += batches(second, 3)
    assert all((a == b).all() for a, b in zip(expected, got))
    with pytest.raises(ValueError, match="order"):
        TokenSequences(shards, SEQ, seed=2).load_state_dict(first.state_dict())

"""Token shards exported as Megatron indexed datasets read back, by megatron-core's own `IndexedDataset`, as the
same tokens with the same document boundaries."""
from __future__ import annotations

import numpy as np
import pytest

from storage.megatron_shard import export_token_stage, write_megatron
from storage.token_shard import TokenShardWriter


def _shard(base, vocab_size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    documents = [rng.integers(0, vocab_size, size) for size in (5, 0, 17, 1, 300)]   # an empty one too
    writer = TokenShardWriter(base, vocab_size)
    for document in documents:
        writer.add_document(document)
    writer.close()
    return documents


def _read(prefix):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    return IndexedDataset(str(prefix))


@pytest.mark.parametrize("vocab_size, dtype", [(32_000, np.uint16), (70_000, np.int32)])
def test_megatron_reads_the_same_tokens_and_documents(tmp_path, vocab_size, dtype):
    documents = _shard(tmp_path / "shard", vocab_size)
    write_megatron(tmp_path / "shard", tmp_path / "megatron")
    dataset = _read(tmp_path / "megatron")
    assert len(dataset) == len(documents) and dataset.index.dtype == dtype
    assert dataset.document_indices.tolist() == list(range(len(documents) + 1))
    assert dataset.sequence_lengths.tolist() == [len(document) for document in documents]
    for index, document in enumerate(documents):
        assert dataset[index].tolist() == document.tolist()


def test_a_stage_that_holds_no_token_shards_is_refused(document_stage_manifest):
    with pytest.raises(ValueError, match="only tokenize and mixture stages"):
        export_token_stage(document_stage_manifest, "unused")


@pytest.fixture()
def document_stage_manifest(tmp_path):
    """A manifest of a document stage (its shards are not token shards)."""
    from storage.manifest import Manifest

    manifest = Manifest(stage="extract", fingerprint="f", config={}, code_version="c", parents=[], shards=[],
                        stats={})
    path = tmp_path / "manifest.json"
    path.write_text(manifest.to_json())
    return str(path)


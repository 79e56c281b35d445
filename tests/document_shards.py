"""Document shards (Parquet, the extract stage's schema) written from plain dicts, for the tests of the stages
that read them (tokenizer training, tokenization, export)."""
from __future__ import annotations

from pathlib import Path

from storage.document_shard import DOCUMENT_SCHEMA, write_documents


def document(index: int, text: str, lang: str) -> dict:
    """A document row with `text` and placeholder provenance."""
    return {"id": f"doc-{index:04d}", "url": f"https://example.org/{index}", "text": text, "lang": lang,
            "lang_score": 0.9, "source": "test", "warc_path": "", "warc_record_id": "", "warc_offset": 0,
            "warc_date": "", "charset": "utf-8"}


def write_shards(root: Path, shards: list[list[dict]]) -> list[str]:
    """One Parquet shard per list of documents; their URLs."""
    urls = []
    for index, docs in enumerate(shards):
        url = str(root / f"docs-{index}.parquet")
        write_documents({name: [doc[name] for doc in docs] for name in DOCUMENT_SCHEMA.names}, url)
        urls.append(url)
    return urls

"""The evaluation suite: held-out clean text in named domains, written once per ablation.

`suite.jsonl` holds one line per document (`domain`, `name`, `text`); `ngrams.npz` holds the n-grams of all of
it, which the decontamination step and the quality references are checked against.
"""
from __future__ import annotations

import gzip
import json
import os
import re

from configs.evaluation import EvalDomain, EvalSuiteConfig
from configs.html import HtmlTextConfig
from storage.fs import atomic_output
from tasks.dedup.normalize import key64
from tasks.evaluation.ngrams import NgramSet
from tasks.extract.html_text import html_to_text
from tasks.extract.langid import LanguageIdentifier
from tasks.quality.reference import TEXT_SUFFIXES, reference_files

SUITE_FILE = "suite.jsonl"
NGRAMS_FILE = "ngrams.npz"
_ARTICLE_TITLE = re.compile(r"^ = [^=].* = $")
_HTML_SUFFIXES = (".html", ".html.gz", ".htm")


def build_suite(config: EvalSuiteConfig, out_dir: str, lid_model: str | None = None) -> dict:
    """Write the suite and its n-grams under `out_dir`; returns per-domain counts. `lid_model` (fastText lid.176)
    is needed by domains that keep only some `languages`."""
    documents = [doc for name, domain in config.domains.items()
                 for doc in domain_documents(name, domain, config.seed, lid_model)]
    empty = [name for name in config.domains if not any(doc["domain"] == name for doc in documents)]
    if empty:
        raise ValueError(f"eval domains {empty} hold no text: check their paths and format")
    os.makedirs(out_dir, exist_ok=True)
    with atomic_output(os.path.join(out_dir, SUITE_FILE)) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for doc in documents:
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
    ngrams = NgramSet.of_texts([doc["text"] for doc in documents], config.ngram)
    with atomic_output(os.path.join(out_dir, NGRAMS_FILE)) as tmp:
        ngrams.save(tmp)
    domains = {name: {"documents": sum(doc["domain"] == name for doc in documents),
                      "chars": sum(len(doc["text"]) for doc in documents if doc["domain"] == name),
                      "bytes": sum(len(doc["text"].encode("utf-8")) for doc in documents if doc["domain"] == name)}
               for name in config.domains}
    return {"domains": domains, "ngrams": len(ngrams)}


def read_suite(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def domain_documents(name: str, domain: EvalDomain, seed: int, lid_model: str | None = None) -> list[dict]:
    """The domain's documents in a seeded order (by a hash of their name), taken until `max_chars` is filled;
    documents that are too short or in another language are passed over."""
    if domain.languages and not lid_model:
        raise ValueError(f"eval domain {name!r} keeps languages {domain.languages}: a language-ID model is needed")
    identify = LanguageIdentifier(lid_model, 2000).predict if domain.languages else None
    candidates = sorted(_units(domain), key=lambda unit: (key64(f"{seed}\0{unit[0]}"), unit[0]))
    chosen, filled = [], 0
    for unit_name, text in candidates:
        text = text.strip()
        if len(text) < domain.min_document_chars or (identify and identify(text)[0] not in domain.languages):
            continue
        text = _cut(text, min(domain.max_document_chars, domain.max_chars - filled))
        if not text:
            continue
        chosen.append({"domain": name, "name": unit_name, "text": text})
        filled += len(text)
        if filled >= domain.max_chars - 100:
            break
    return chosen


def _units(domain: EvalDomain) -> list[tuple[str, str]]:
    files = source_files(domain)
    if domain.format == "wikitext_articles":
        return [unit for path in files for unit in _wikitext_articles(path)]
    if domain.format == "html":
        return [(_short(path), html_to_text(_read(path), HtmlTextConfig(main_content=False))) for path in files]
    return [(_short(path), _read(path)) for path in files]


def _short(path: str) -> str:
    """A document's name: its folder and file name, so the seeded order does not depend on where the data is."""
    return "/".join(os.path.normpath(path).split(os.sep)[-2:])


def source_files(domain: EvalDomain) -> list[str]:
    return reference_files(domain.paths, _HTML_SUFFIXES if domain.format == "html" else TEXT_SUFFIXES)


def _read(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _wikitext_articles(path: str) -> list[tuple[str, str]]:
    """Raw WikiText files put each article under a ` = Title = ` line (sections use ` = = `)."""
    articles, title, lines = [], None, []
    for line in _read(path).splitlines():
        if _ARTICLE_TITLE.match(line):
            if title and lines:
                articles.append((f"{_short(path)}#{title}", "\n".join(lines)))
            title, lines = line.strip(" ="), []
        elif title and line.strip():
            lines.append(line.strip())
    if title and lines:
        articles.append((f"{_short(path)}#{title}", "\n".join(lines)))
    return articles


def _cut(text: str, limit: int) -> str:
    """`text` up to `limit` characters, cut at the last line break before it (or the limit, if there is none)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head[:head.rfind("\n")].rstrip() if "\n" in head else head

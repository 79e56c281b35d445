"""`sluice_lastword`: a LAMBADA-style last-word cloze for lm-evaluation-harness (`sluice eval`), built at run time
from held-out reference text in the shared data, with no hub.

The text is WikiText-2's *validation* split (`reference/wikitext-2/tokens.valid.txt`, Wikipedia articles). The
demo corpus writes its pages from the Gutenberg books, the speeches and WikiText-2's *test* split
(`dev/corpus/passages.py`), and WikiText's splits hold different articles, so a model trained on the demo corpus
has not seen these paragraphs. (The quality classifier's default positives include the folder, so a filtered
corpus leans towards its style; its text is still never trained on.)

Each sentence that ends in a plain word (letters only, `min_answer_chars` or more) is an item: the context is the
sentence up to that word, with the whole sentences before it in its paragraph while they are free of WikiText's
`<unk>` and fit in `max_context_words`; the answer is the word, and the choices are the answer and `choices - 1`
other items' answers of the same case (capitalised or not), so a model has to read the context to tell them apart.
Accuracy over the choices ranks models too small to produce the word greedily, and the answer's log-probability
(logged beside it by `sluice eval`) ranks them more finely still.

Deterministic: the same file and settings give the same items, choices and order (the draws are seeded by the
item's id, not by Python's hash); items are ordered by a seeded hash, so `--limit N` takes a spread of articles.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path("reference") / "wikitext-2" / "tokens.valid.txt"
TASK_NAME = "sluice_lastword"
_ARTICLE_TITLE = re.compile(r"^ = [^=].* = $")
_SENTENCE_END = re.compile(r"(?<=[.!?]) (?=[A-Z\"'(])")
# the tokenized WikiText's spacing undone: "1 @,@ 000" -> "1,000", "word , word" -> "word, word", quotes, brackets
_DETOKENIZE = [(re.compile(r" @(.)@ "), r"\1"), (re.compile(r" ([,.;:!?)\]%])"), r"\1"),
               (re.compile(r"([(\[$]) "), r"\1"), (re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m)\b"), r"\1"),
               (re.compile(r'" ([^"]*?) "'), r'"\1"')]
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class LastWordSettings:
    choices: int = 4
    min_context_words: int = 15
    max_context_words: int = 120
    min_answer_chars: int = 3
    seed: int = 0


def lastword_items(data_dir: str | Path, settings: LastWordSettings = LastWordSettings(),
                   source: Path = SOURCE) -> list[dict]:
    """The task's items: `id` (article, paragraph and sentence), `context`, `answer`, `choices` (the answer among
    them) and `label` (its index). Sentences with WikiText's `<unk>` are left out. `source`: a WikiText file in the
    data folder (the task's is the validation split)."""
    path = Path(data_dir) / source
    if not path.is_file():
        raise FileNotFoundError(f"{TASK_NAME} is built from {path}, which does not exist (the shared data's "
                                f"{source.as_posix()}; SLUICE_DATA_DIR names another data folder)")
    candidates = [item for paragraph_id, paragraph in _paragraphs(path.read_text(encoding="utf-8"))
                  for item in _candidates(paragraph_id, paragraph, settings)]
    pools = {upper: sorted({item["answer"] for item in candidates if item["answer"][0].isupper() == upper})
             for upper in (False, True)}
    items = []
    for item in candidates:
        rng = random.Random(f"{settings.seed}\0{item['id']}")
        others = [word for word in pools[item["answer"][0].isupper()] if word.lower() != item["answer"].lower()]
        if len(others) < settings.choices - 1:
            continue
        choices = rng.sample(others, settings.choices - 1)
        label = rng.randrange(settings.choices)
        choices.insert(label, item["answer"])
        items.append(item | {"choices": choices, "label": label})
    return sorted(items, key=lambda item: (_order(settings.seed, item["id"]), item["id"]))


def _paragraphs(text: str):
    """(id, detokenized paragraph) of every paragraph line, the id being `<article number> <article title>
    #<paragraph number>` (titles repeat once `<unk>` stands in their words)."""
    article, title, number = 0, "", 0
    for line in text.splitlines():
        if _ARTICLE_TITLE.match(line):
            article, title, number = article + 1, _detokenized(line.strip(" =")), 0
        elif line.strip() and not line.strip().startswith("="):
            number += 1
            yield f"{article} {title}#{number}", _detokenized(line.strip())


def _detokenized(line: str) -> str:
    for pattern, replacement in _DETOKENIZE:
        line = pattern.sub(replacement, line)
    return line


def _candidates(item_id: str, paragraph: str, settings: LastWordSettings) -> list[dict]:
    """Each sentence of the paragraph that ends in a plain word, with the clean sentences before it as context."""
    sentences = _SENTENCE_END.split(paragraph)
    found = []
    for index, sentence in enumerate(sentences):
        if not sentence.endswith(".") or "<unk>" in sentence:
            continue
        words = sentence[:-1].split(" ")
        answer = words[-1]
        if len(answer) < settings.min_answer_chars or not _WORD.fullmatch(answer):
            continue
        context_words = words[:-1]
        for before in reversed(sentences[:index]):      # whole sentences before it, while they fit and are clean
            more = before.split(" ")
            if "<unk>" in before or len(context_words) + len(more) > settings.max_context_words:
                break
            context_words = more + context_words
        if settings.min_context_words <= len(context_words) <= settings.max_context_words:
            found.append({"id": f"{item_id}.{index + 1}", "context": " ".join(context_words), "answer": answer})
    return found


def _order(seed: int, item_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\0{item_id}".encode()).digest()[:8]

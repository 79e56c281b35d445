"""CCNet-style perplexity (Wenzek et al. 2020): normalize, SentencePiece, 5-gram KenLM.

Training runs KenLM's `lmplz` and `build_binary` (built from the kenlm source distribution by the set-up
script); scoring uses the `kenlm` Python module. A document's perplexity weighs its lines by their length:
10 ** (-sum of line log10 scores / sum of line token counts, each line counting its end-of-sentence too).
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass

import regex
import sentencepiece as spm

from configs.quality import KenlmConfig

_DIGIT = regex.compile(r"\p{Nd}")
_SPACES = regex.compile(r"\s+")
_UNICODE_PUNCTUATION = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "«": '"', "»": '"',
                                      "–": "-", "—": "-", "…": "...", "，": ",", "。": ".", "：": ":",
                                      "；": ";", "？": "?", "！": "!", "（": "(", "）": ")"})
REBUILD_HINT = "rebuild it by rerunning the quality_models stage (delete its folder in the store)"


class ModelFileError(RuntimeError):
    """A model file that is missing or cannot be read; the message names it and how to rebuild it."""


class _WithoutNonspacingMarks(dict):
    """A str.translate table that deletes the nonspacing marks (category Mn) and keeps every other character, each
    character's category looked up once per process rather than once per occurrence."""

    def __missing__(self, code: int) -> int | None:
        kept = None if unicodedata.category(chr(code)) == "Mn" else code
        self[code] = kept
        return kept


_NONSPACING_MARKS = _WithoutNonspacingMarks()


def normalize_line(line: str) -> str:
    """CCNet's normalization: lower case, accents stripped, digits to 0, ASCII punctuation, single spaces."""
    line = unicodedata.normalize("NFD", line.strip().lower())
    if not line.isascii():          # ASCII holds no combining mark
        line = line.translate(_NONSPACING_MARKS)
    line = _DIGIT.sub("0", line.translate(_UNICODE_PUNCTUATION))
    return _SPACES.sub(" ", line).strip()


def kenlm_binaries(config: KenlmConfig) -> tuple[str, str]:
    """Paths of lmplz and build_binary: `bin_dir`, else beside this Python, else on PATH."""
    found = []
    for name in ("lmplz", "build_binary"):
        candidates = [os.path.join(config.bin_dir, name)] if config.bin_dir else [
            os.path.join(os.path.dirname(sys.executable), name), shutil.which(name) or ""]
        path = next((candidate for candidate in candidates if candidate and os.access(candidate, os.X_OK)), None)
        if path is None:
            raise FileNotFoundError(f"KenLM's {name} not found (looked in {[c for c in candidates if c]}); "
                                    "build it with `bash .ci/setup` (it compiles lmplz and build_binary from "
                                    "the kenlm source distribution)")
        found.append(path)
    return found[0], found[1]


@dataclass(frozen=True)
class KenlmModelFiles:
    sentencepiece: str
    kenlm: str


def train_kenlm(lines: list[str], out_dir: str, lang: str, config: KenlmConfig) -> KenlmModelFiles:
    """Train the language's SentencePiece + KenLM pair on reference lines; returns the two files."""
    lmplz, build_binary = kenlm_binaries(config)
    os.makedirs(out_dir, exist_ok=True)
    files = KenlmModelFiles(os.path.join(out_dir, f"{lang}.sp.model"), os.path.join(out_dir, f"{lang}.arpa.bin"))
    normalized = [text for text in map(normalize_line, lines) if text]
    model = _train_sentencepiece(normalized, files.sentencepiece, config.vocab_size)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as handle:
            for text in normalized:
                handle.write(" ".join(model.encode(text, out_type=str)) + "\n")
        arpa = os.path.join(tmp, "model.arpa")
        # --discount_fallback: small reference corpora lack the count-of-counts Kneser-Ney needs.
        _run([lmplz, "-o", str(config.order), "-S", f"{_sort_memory(os.path.getsize(corpus))}K", "-T", tmp,
              "--discount_fallback", "--prune", *map(str, config.prune[:config.order])], stdin=corpus, stdout=arpa)
        _run([build_binary, arpa, files.kenlm + ".tmp"])
        os.replace(files.kenlm + ".tmp", files.kenlm)
    return files


def _sort_memory(corpus_bytes: int) -> int:
    """lmplz's sort memory (-S) in KiB: 40 times the corpus, at least 256 MiB, at most a fifth of the machine's
    memory (lmplz's own "20%", given before). lmplz's time grows with the memory it is given, whatever the corpus
    needs: 0.93 s at 20% of 24 GB against 0.54 s at 256 MiB for the 6.4 MB default reference, the same ARPA file;
    past it the sort spills to the temporary folder (-T)."""
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(max(256 << 20, 40 * corpus_bytes), machine // 5) >> 10


def _train_sentencepiece(lines: list[str], model_path: str, vocab_size: int) -> spm.SentencePieceProcessor:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buffer, vocab_size=vocab_size,
                                   model_type="unigram", character_coverage=0.9999, hard_vocab_limit=False,
                                   input_sentence_size=500_000, shuffle_input_sentence=True, num_threads=1,
                                   seed_sentencepiece_size=200_000, minloglevel=2)
    with open(model_path, "wb") as handle:
        handle.write(buffer.getvalue())
    return spm.SentencePieceProcessor(model_proto=buffer.getvalue())


def _run(command: list[str], stdin: str | None = None, stdout: str | None = None) -> None:
    with open(stdin or os.devnull, "rb") as source, open(stdout or os.devnull, "wb") as sink:
        done = subprocess.run(command, stdin=source, stdout=sink, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(f"{os.path.basename(command[0])} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')[-2000:]}")


class PerplexityScorer:
    """Loads one language's model pair once; `perplexity(text)` scores a document."""

    def __init__(self, files: KenlmModelFiles):
        import kenlm

        for path in (files.sentencepiece, files.kenlm):
            if not os.path.isfile(path):
                raise ModelFileError(f"perplexity model file {path} is missing; {REBUILD_HINT}")
        try:
            self.sentencepiece = spm.SentencePieceProcessor(model_file=files.sentencepiece)
        except (OSError, RuntimeError) as error:
            raise ModelFileError(f"cannot read SentencePiece model {files.sentencepiece} ({error}); "
                                 f"{REBUILD_HINT}") from None
        try:
            self.model = kenlm.Model(files.kenlm)
        except (OSError, RuntimeError) as error:
            raise ModelFileError(f"cannot read KenLM model {files.kenlm} ({error}); {REBUILD_HINT}") from None

    def perplexity(self, text: str) -> float | None:
        """Length-weighted perplexity over the text's lines; None for a text with no scorable line."""
        log_score, length = 0.0, 0
        for line in text.split("\n"):
            normalized = normalize_line(line)
            if not normalized:
                continue
            pieces = " ".join(self.sentencepiece.encode(normalized, out_type=str))
            log_score += self.model.score(pieces)
            length += pieces.count(" ") + 2      # tokens + </s>
        return round(10.0 ** (-log_score / length), 1) if length else None

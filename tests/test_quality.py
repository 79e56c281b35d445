"""Quality scorers, models and filter on real text: reference books and speeches, web text, CCNet documents,
the LDNOOBW lists. KenLM (lmplz + build_binary built at set-up) and fastText train for real."""
from __future__ import annotations

import gzip
import json
import os
import random
import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from configs.quality import C4LineRules, ClassifierConfig, KenlmConfig, PiiConfig, QualityConfig, QualityFilterConfig
from storage.document_shard import DOCUMENT_SCHEMA, read_documents, write_documents
from tasks.quality.attributes import ATTRIBUTE_TYPES, heuristic_attributes
from tasks.quality.families import family_checks
from tasks.quality.gopher import DUPLICATE_NGRAMS, _duplicated_ngram_chars, _top_ngram_chars, _word_ids
from tasks.quality.rules import c4_reason, fineweb_reason, gopher_quality_reason
from tasks.quality.words import split_words

GERMAN = ("Die Stadt liegt an einem großen Fluss und ist für ihre alte Brücke bekannt. Im Sommer kommen viele "
          "Besucher, die sich die historischen Gebäude ansehen und in den kleinen Cafés am Ufer sitzen. Der "
          "Bürgermeister hat angekündigt, dass die Brücke im nächsten Jahr renoviert wird, weil sie nicht mehr "
          "sicher ist. Viele Bewohner sind mit dem Plan zufrieden, aber einige befürchten, dass die Arbeiten den "
          "Verkehr in der Innenstadt für Monate stören werden. Die Kosten werden auf mehrere Millionen Euro "
          "geschätzt, und ein Teil davon soll aus einem Programm des Landes kommen.")


@pytest.fixture(scope="module")
def bad_words(data_dir) -> str:
    return str(data_dir / "quality_labelled" / "ldnoobw")


def _attributes(text: str, lang: str, bad_words: str) -> dict:
    return {"id": "doc", "lang": lang, **heuristic_attributes(text, lang, C4LineRules(), bad_words)}


def _reference_text(data_dir, name: str) -> str:
    return (data_dir / "reference" / "gutenberg_nltk" / name).read_text(encoding="utf-8", errors="replace")


def test_words_split_punctuation_off_but_keep_numbers_urls_and_abbreviations():
    assert split_words("Mr. Smith said: don't go (at 12:30, 2020-07-08) to http://x.org/a?b=1.") == [
        "Mr.", "Smith", "said", ":", "do", "n't", "go", "(", "at", "12:30", ",", "2020-07-08", ")", "to",
        "http://x.org/a?b=1", "."]
    assert split_words("well-known ... --") == ["well", "-", "known", "...", "--"]


def test_stop_words_follow_the_document_language(bad_words):
    """With English stop words every German page fails Gopher's stop-word rule; with German ones it passes."""
    thresholds = QualityFilterConfig().gopher_quality
    as_german = _attributes(GERMAN, "de", bad_words)
    as_english = _attributes(GERMAN, "en", bad_words)
    assert as_german["gopher_stop_words"] >= 5 and as_english["gopher_stop_words"] == 0
    assert gopher_quality_reason(as_german, thresholds) is None
    assert gopher_quality_reason(as_english, thresholds) == "gopher_too_few_stop_words"
    assert _attributes(GERMAN, "sw", bad_words)["gopher_stop_words"] is None    # no list: rule not applied


def test_bad_words_are_found_between_non_word_characters_as_cs_regex_finds_them(bad_words):
    """C4's rule: an entry of the language's list with a non-word character or the text's end on each side (words,
    and phrases such as "ball gag"); inside another word it is not one. Without spaces (Japanese), anywhere."""
    from tasks.quality.c4 import has_bad_words

    found = {text: has_bad_words(text, "en", bad_words) for text in (
        "Our BALL GAG review.", "a ball  gag", "the ballgag", "(anal)", "analysis and canal", "2 girls 1 cup!",
        "plain prose about a ball game")}
    assert found == {"Our BALL GAG review.": True, "a ball  gag": False, "the ballgag": False, "(anal)": True,
                     "analysis and canal": False, "2 girls 1 cup!": True, "plain prose about a ball game": False}
    japanese = next(word for word in open(f"{bad_words}/ja", encoding="utf-8").read().split() if len(word) > 1)
    assert has_bad_words(f"これは{japanese}です", "ja", bad_words)
    assert not has_bad_words("これは本です", "ja", bad_words)
    assert has_bad_words("anything", "sw", bad_words) is None


def test_real_prose_passes_every_heuristic_and_repeated_boilerplate_fails(data_dir, bad_words):
    prose = _reference_text(data_dir, "austen-emma.txt")[20_000:40_000]
    row = _attributes(prose, "en", bad_words)
    config = QualityFilterConfig()
    outcome = {family: check(row | {"kenlm_ppl": None, "hq_prob": None}) for family, check in family_checks(config, {})}
    # Austen's "intercourse" (conversation) is on LDNOOBW's list: C4's bad-word rule is known to remove such prose.
    assert outcome == {"gopher_quality": None, "gopher_repetition": None, "c4": "bad_words", "fineweb": None,
                       "kenlm": None, "classifier": None}
    boilerplate = "\n".join(["Home | About | Contact", "Click here to subscribe!", prose[:300]] * 20)
    failed = {family: check(_attributes(boilerplate, "en", bad_words) | {"kenlm_ppl": None, "hq_prob": None})
              for family, check in family_checks(config, {})}
    assert failed["gopher_repetition"] == "dup_line_frac" and failed["fineweb"] is not None


def test_ngram_repetition_matches_a_plain_string_implementation(data_dir):
    rng = random.Random(3)
    words = _reference_text(data_dir, "melville-moby_dick.txt").split()[:400]
    words = words + words[50:120] + rng.sample(words, 60) + words[10:40]      # repeats of several lengths
    ids = _word_ids(words)
    lengths = np.array([len(word) for word in words])
    for n in (2, 3, 4):
        grams = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
        top, count = Counter(grams).most_common(1)[0]
        assert _top_ngram_chars(ids, lengths, n) == len(top) * count
    for n in (5, 7, 10):
        seen, repeated, index = set(), 0, 0
        while index < len(words) - n + 1:
            gram = tuple(words[index:index + n])
            if gram in seen:
                repeated += sum(map(len, gram))
                index += n
            else:
                seen.add(gram)
                index += 1
        assert _duplicated_ngram_chars(ids, lengths, n)[0] == repeated > 0
    repeating = None            # as gopher_repetition looks: each n only where the n-grams one word shorter repeat
    for n in DUPLICATE_NGRAMS:
        chained, repeating = _duplicated_ngram_chars(ids, lengths, n, repeating)
        assert chained == _duplicated_ngram_chars(ids, lengths, n)[0], n


def test_c4_rules_and_bad_words(bad_words):
    thresholds = QualityFilterConfig().c4
    lorem = "This page is a draft. Lorem ipsum dolor sit amet, consectetur."
    assert c4_reason(_attributes(lorem, "en", bad_words), thresholds) == "lorem_ipsum"
    code = "The function is shown below. It returns { a: 1 } to the caller."
    assert c4_reason(_attributes(code, "en", bad_words), thresholds) == "curly_bracket"
    assert c4_reason(_attributes("Short. Very short.", "en", bad_words), thresholds) == "too_few_sentences"
    with open(os.path.join(bad_words, "en")) as handle:
        word = handle.readline().strip()
    sentences = " ".join(["The weather was mild and the roads were quiet all day."] * 6)
    assert c4_reason(_attributes(sentences, "en", bad_words), thresholds) is None
    assert c4_reason(_attributes(f"{sentences}\nHe said {word} twice.", "en", bad_words), thresholds) == "bad_words"
    assert _attributes(sentences, "sw", bad_words)["c4_bad_words"] is None        # no list for Swahili


@pytest.mark.parametrize("text, lang", [
    ("", "en"), ("x" * 2_000_000, "en"), ("\x00\x01\ufffd\x7f" * 5000, None), ("。".join(["这是一个测试句子"] * 50), "zh"),
    ("\n\n\n", "en"),
])
def test_bad_input_gets_attributes_not_a_crash(text, lang, bad_words):
    row = _attributes(text, lang, bad_words)
    assert set(ATTRIBUTE_TYPES) - {"kenlm_ppl", "hq_prob"} <= set(row)
    pa.Table.from_pylist([row | {"kenlm_ppl": None, "hq_prob": None}],
                         schema=pa.schema([(name, kind) for name, kind in ATTRIBUTE_TYPES.items()]))
    if lang == "zh":
        assert row["gopher_words"] is None                           # word rules do not apply to Chinese
    if not text.strip():
        assert fineweb_reason(row, QualityFilterConfig().fineweb) == "empty"


@pytest.fixture(scope="module")
def kenlm_models(data_dir, tmp_path_factory):
    from tasks.quality.models import train_language_model

    out = str(tmp_path_factory.mktemp("kenlm"))
    config = KenlmConfig(vocab_size=2000)
    return out, train_language_model("en", [str(data_dir / "reference" / "speeches_nltk" / "inaugural")], out, config)


def test_kenlm_ranks_clean_text_below_scrambled_text_and_ccnet_head_documents(kenlm_models, data_dir):
    from tasks.quality.perplexity import KenlmModelFiles, PerplexityScorer

    out, result = kenlm_models
    scorer = PerplexityScorer(KenlmModelFiles(os.path.join(out, result["sentencepiece"]),
                                              os.path.join(out, result["kenlm"])))
    prose = (data_dir / "reference" / "speeches_nltk" / "state_union" / "1945-Truman.txt").read_text(
        encoding="utf-8", errors="replace")[:5000]
    words = prose.split()
    random.Random(0).shuffle(words)
    assert scorer.perplexity(prose) * 2 < scorer.perplexity(" ".join(words))
    assert scorer.perplexity("") is None
    with gzip.open(data_dir / "quality_labelled" / "ccnet_dolma" / "multiple_files_cc_en_head-0091.jsonl.gz", "rt") as f:
        ccnet = [json.loads(line)["text"] for line in f]
    assert all(scorer.perplexity(text) < scorer.perplexity(" ".join(random.Random(1).sample(text.split(),
                                                                                         len(text.split()))))
               for text in ccnet)


def test_model_files_missing_or_corrupt_give_a_clear_error(kenlm_models, tmp_path):
    from tasks.quality.classifier import QualityClassifier
    from tasks.quality.perplexity import KenlmModelFiles, ModelFileError, PerplexityScorer

    out, result = kenlm_models
    corrupt = tmp_path / "en.arpa.bin"
    corrupt.write_bytes(b"not a kenlm model" * 10)
    with pytest.raises(ModelFileError, match=f"{corrupt}.*rerunning the quality_models stage"):
        PerplexityScorer(KenlmModelFiles(os.path.join(out, result["sentencepiece"]), str(corrupt)))
    with pytest.raises(ModelFileError, match="missing"):
        PerplexityScorer(KenlmModelFiles(str(tmp_path / "none.model"), str(corrupt)))
    bad_classifier = tmp_path / "classifier.bin"
    bad_classifier.write_bytes(b"\x00" * 100)
    with pytest.raises(ModelFileError, match=str(bad_classifier)):
        QualityClassifier(str(bad_classifier))


def test_too_little_reference_text_or_no_lmplz_is_refused_with_the_numbers(data_dir, tmp_path):
    from tasks.quality.models import train_language_model
    from tasks.quality.reference import ReferenceTooSmall

    tiny = str(data_dir / "quality_labelled" / "cs336_fixtures" / "low_quality_cc.txt")
    with pytest.raises(ReferenceTooSmall, match="at least 200,000 are needed"):
        train_language_model("en", [tiny], str(tmp_path), KenlmConfig())
    with pytest.raises(FileNotFoundError, match="lmplz not found.*ci/setup"):
        train_language_model("en", [tiny], str(tmp_path), KenlmConfig(bin_dir=str(tmp_path), min_reference_chars=1))


def _web_text_shard(data_dir, url: str) -> None:
    """Real informal web text (NLTK webtext: chat, ads, reviews) as document rows, the negatives' stand-in."""
    from tasks.quality.classifier import chunk_lines

    lines = [line for name in ("overheard.txt", "singles.txt", "wine.txt")
             for line in (data_dir / "quality_labelled" / "nltk_webtext" / name).read_text(
                 encoding="utf-8", errors="replace").splitlines() if line.strip()]
    texts = chunk_lines(lines, 600)
    rows = {name: [None] * len(texts) for name in DOCUMENT_SCHEMA.names}
    rows.update(id=[f"web-{i}" for i in range(len(texts))], url=[f"https://web.example/{i}" for i in range(len(texts))],
                text=texts, lang=["en"] * len(texts), source=["webtext"] * len(texts))
    write_documents(rows, url)


def _webtext_classifier(data_dir, tmp_path, examples_per_class: int) -> tuple[dict, str, ClassifierConfig]:
    """The quality classifier trained on inaugural speeches against NLTK web text, as the pipeline trains it: its
    result, the web text's shard and the config."""
    from tasks.quality.models import train_quality_classifier

    shard = str(tmp_path / "web.parquet")
    _web_text_shard(data_dir, shard)
    config = ClassifierConfig(positives=[str(data_dir / "reference" / "speeches_nltk")],
                              max_examples_per_class=examples_per_class, positive_chunk_chars=600)
    return train_quality_classifier([shard], str(tmp_path), config, {
        "positives": [str(data_dir / "quality_labelled" / "cs336_fixtures" / "high_quality_wiki_reference.txt")],
        "negatives": [str(data_dir / "quality_labelled" / "nltk_webtext" / "pirates.txt")]}), shard, config


def test_the_classifiers_examples_are_one_lower_cased_line_whatever_the_whitespace():
    """Every Unicode whitespace character (str.isspace, which is what the regex \\s matches) separates words, runs
    of them become one space, none is left at either end."""
    import sys

    from tasks.quality.classifier import example_text

    spaces = "".join(chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace())
    assert len(spaces) == 29 and re.findall(r"\s", spaces) == list(spaces)
    assert example_text(f"{spaces}Hello{spaces}WORLD\u00a0again\n\n{spaces}") == "hello world again"


def test_classifier_trains_in_the_pipeline_and_separates_held_out_text(data_dir, tmp_path):
    from tasks.quality.classifier import QualityClassifier
    from tasks.quality.models import train_quality_classifier

    result, shard, config = _webtext_classifier(data_dir, tmp_path, 800)
    assert result["heldout"]["auc"] > 0.9 and result["heldout"]["positives"] > 20
    assert result["external"]["positives"] > 10 and result["external"]["auc"] is not None
    classifier = QualityClassifier(str(tmp_path / result["model"]))
    assert 0.0 <= classifier.hq_prob("") <= 1.0
    # Calibrated on one held-out half and measured on the other: Platt's fit is monotone (the ranking, so the
    # AUC and any keep-top-k, is unchanged) and brings the probabilities closer to the observed shares.
    assert (tmp_path / result["calibration_file"]).is_file() and result["calibration"]["a"] > 0
    heldout = result["heldout"]
    assert heldout["reliability"]["ece"] < heldout["reliability_uncalibrated"]["ece"]
    texts = [f"sample text number {i} " * (i + 1) for i in range(20)]
    calibrated = [classifier.hq_prob(text) for text in texts]
    raw = [classifier.hq_prob(text, calibrate=False) for text in texts]
    assert sorted(range(20), key=calibrated.__getitem__) == sorted(range(20), key=raw.__getitem__)
    with pytest.raises(ValueError, match="at least 50 are needed"):
        train_quality_classifier([shard], str(tmp_path / "few"), config.model_copy(
            update={"positives": [str(data_dir / "quality_labelled" / "cs336_fixtures" / "low_quality_cc.txt")]}), {})


def test_filter_reads_stored_attributes_and_copies_in_other_shards_get_the_same_decision(data_dir, bad_words,
                                                                                          tmp_path):
    """Score real documents, place copies in two different shards among other neighbours, filter: every copy
    gets the decision and attributes of the original; a threshold change alters decisions without rescoring."""
    from tasks.quality.apply import FilterJob, filter_shard
    from tasks.quality.models import write_models_index
    from tasks.quality.score import ScoreJob, score_shard
    from tasks.quality.summary import SKETCH_SUFFIX, Sketch, summarize_attributes

    with gzip.open(data_dir / "quality_labelled" / "ccnet_dolma" / "provided_documents_000.json.gz", "rt") as f:
        texts = [json.loads(line)["text"] for line in f]
    texts += [_reference_text(data_dir, "austen-emma.txt")[i * 3000:(i + 1) * 3000] for i in range(1, 6)]
    shards = [texts[:8] + texts[:3], texts[8:] + texts[:3][::-1]]     # the first three appear in both shards
    models = tmp_path / "models"
    models.mkdir()
    write_models_index(str(models), [], None)
    config = QualityConfig(kenlm=KenlmConfig(enabled=False))
    scored = []
    for index, shard_texts in enumerate(shards):
        rows = {name: [None] * len(shard_texts) for name in DOCUMENT_SCHEMA.names}
        rows.update(id=[f"s{index}-{i}" for i in range(len(shard_texts))], url=[f"u{i}" for i in range(len(shard_texts))],
                    text=shard_texts, lang=["en"] * len(shard_texts))
        write_documents(rows, str(tmp_path / f"in{index}.parquet"))
        out = str(tmp_path / f"scored{index}.parquet")
        result = score_shard(ScoreJob(str(tmp_path / f"in{index}.parquet"), out, str(models)), config, bad_words)
        assert result["documents_out"] == len(shard_texts) and result["notes"].get("no_perplexity_model_en") is None
        scored.append(out)
    sketch = Sketch()
    for url in scored:                                         # as the scores stage adds them up
        sketch.add(Sketch.load(url + SKETCH_SUFFIX))
    cutoffs = summarize_attributes(sketch, scored, config)

    def decisions(thresholds: QualityFilterConfig) -> dict[str, set]:
        by_text: dict[str, set] = {}
        for index, url in enumerate(scored):
            job = FilterJob((url,), str(tmp_path / f"kept{index}.parquet"), str(tmp_path / f"removed{index}.parquet"))
            filter_shard(job, thresholds, cutoffs, PiiConfig(enabled=False))
            kept = set(read_documents(str(tmp_path / f"kept{index}.parquet")).column("text").to_pylist())
            removed = dict(zip(*[read_documents(str(tmp_path / f"removed{index}.parquet")).column(c).to_pylist()
                                 for c in ("id", "reason")]))
            table = read_documents(url)
            for doc_id, text in zip(table.column("id").to_pylist(), table.column("text").to_pylist()):
                by_text.setdefault(text, set()).add("kept" if text in kept else removed[doc_id])
        return by_text

    default = decisions(QualityFilterConfig())
    assert all(len(outcomes) == 1 for outcomes in default.values())         # copies agree wherever they sit
    # Redaction comes after every decision: the same documents are kept, with their contact details replaced.
    job = FilterJob((scored[0],), str(tmp_path / "kept-pii.parquet"), str(tmp_path / "removed-pii.parquet"))
    redacted = filter_shard(job, QualityFilterConfig(), cutoffs, PiiConfig())
    kept, kept_redacted = (read_documents(str(tmp_path / name)) for name in ("kept0.parquet", "kept-pii.parquet"))
    assert kept_redacted.column("id").to_pylist() == kept.column("id").to_pylist()
    changed = sum(a != b for a, b in zip(kept.column("text").to_pylist(), kept_redacted.column("text").to_pylist()))
    assert changed == redacted["notes"].get("pii_documents", 0)
    assert any(outcome == {"kept"} for outcome in default.values()) and any(o != {"kept"} for o in default.values())
    # A run of shards filtered into one output shard keeps what the shards kept one by one, in shard order.
    run = FilterJob(tuple(scored), str(tmp_path / "kept-run.parquet"), str(tmp_path / "removed-run.parquet"))
    merged = filter_shard(run, QualityFilterConfig(), cutoffs, PiiConfig(enabled=False))
    assert list(merged["inputs"]) == [str(url) for url in scored]
    assert read_documents(str(tmp_path / "kept-run.parquet")).column("id").to_pylist() == [
        doc_id for index in range(len(scored))
        for doc_id in read_documents(str(tmp_path / f"kept{index}.parquet")).column("id").to_pylist()]
    attributes = [read_documents(url).select(list(ATTRIBUTE_TYPES)).to_pylist() for url in scored]
    assert attributes[0][:3] == attributes[1][-3:][::-1]
    strict = QualityFilterConfig(gopher_quality={"min_doc_words": 10_000})
    assert all(outcomes == {"gopher_short_doc"} for outcomes in decisions(strict).values())


def test_the_fasttext_training_runs_in_a_fresh_process_and_gives_the_same_model(data_dir, tmp_path, monkeypatch):
    """fastText's "Encountered NaN" met in a long-lived process (full suite runs) on input that trains cleanly in a
    fresh one: the classifier never trains in the calling process (where that NaN would be met), and two trainings
    of the same file and settings, each in its own process, save the same model byte for byte."""
    import fasttext

    from configs.quality import ClassifierConfig
    from tasks.quality.classifier import _train_supervised

    lines = [f"__label__hq {text}" for text in ("the court ruled on the appeal", "the senate passed the bill")] + [
        f"__label__cc {text}" for text in ("buy cheap pills now", "click here for free prizes")]
    (tmp_path / "train.txt").write_text("\n".join(lines * 20) + "\n")

    def not_here(**_):
        raise AssertionError("fastText trained in the calling process")

    monkeypatch.setattr(fasttext, "train_supervised", not_here)
    for name in ("first.bin", "second.bin"):
        _train_supervised(str(tmp_path / "train.txt"), ClassifierConfig(), str(tmp_path / name))
    assert (tmp_path / "first.bin").read_bytes() == (tmp_path / "second.bin").read_bytes()
    assert fasttext.load_model(str(tmp_path / "first.bin")).predict("the senate passed the appeal")[0] == (
        "__label__hq",)
    result, _, _ = _webtext_classifier(data_dir, tmp_path, 200)
    assert result["heldout"]["auc"] > 0.8

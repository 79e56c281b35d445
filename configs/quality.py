"""Recipe model for the quality stages.

Scoring and filtering are separate on purpose: `quality_scores` computes every attribute once (heuristics,
KenLM perplexity, classifier probability); `quality_filter` reads the stored attributes and applies the
thresholds below, so a threshold sweep reruns only the filter. Defaults are the published ones (README cites
each); `null` disables a single rule.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from configs.base import StrictModel

BUCKETS = ("head", "middle", "tail")


class GopherQualityThresholds(StrictModel):
    """Gopher (Rae et al. 2021, appendix A.1.1) quality rules."""
    enabled: bool = True
    min_doc_words: int | None = 50
    max_doc_words: int | None = 100_000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = Field(0.1, description="'#' and ellipses per word")
    max_bullet_lines_ratio: float | None = 0.9
    max_ellipsis_lines_ratio: float | None = 0.3
    min_alpha_words_ratio: float | None = Field(0.8, description="share of words with an alphabetic character")
    min_stop_words: int | None = Field(2, description=(
        "distinct stop words of the document's language; languages without a list skip the rule"))


class GopherRepetitionThresholds(StrictModel):
    """Gopher repetition rules (Rae et al. 2021, table A1)."""
    enabled: bool = True
    dup_line_frac: float | None = 0.3
    dup_para_frac: float | None = 0.3
    dup_line_char_frac: float | None = 0.2
    dup_para_char_frac: float | None = 0.2
    top_ngram_char_frac: dict[int, float] = Field(default_factory=lambda: {2: 0.2, 3: 0.18, 4: 0.16})
    dup_ngram_char_frac: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10})


class C4Thresholds(StrictModel):
    """C4 (Raffel et al. 2020, section 2.2) document rules; the line rules are scoring options (C4LineRules)."""
    enabled: bool = True
    min_sentences: int | None = Field(5, description="sentences in the lines that pass the line rules")
    drop_lorem_ipsum: bool = True
    drop_curly_bracket: bool = True
    drop_bad_words: bool = Field(True, description="LDNOOBW list of the document's language")
    bad_words_keep_fraction: float = Field(0.0, ge=0.0, le=1.0, description=(
        "keep this share of bad-word pages (chosen by a hash of the id, so reruns agree)"))


class FineWebThresholds(StrictModel):
    """FineWeb (Penedo et al. 2024) rules, datatrove's defaults."""
    enabled: bool = True
    min_line_punct_ratio: float | None = 0.12
    line_punct_exclude_zero: bool = False
    max_short_line_ratio: float | None = 0.67
    max_dup_line_char_ratio: float | None = Field(0.01, description=(
        "datatrove's code says 0.01, the FineWeb write-up 0.1: we keep the code's value, which produced the "
        "released dataset"))
    max_newline_ratio: float | None = Field(0.3, description="newlines per word")


class KenlmThresholds(StrictModel):
    enabled: bool = True
    keep_buckets: list[Literal["head", "middle", "tail"]] = Field(default_factory=lambda: ["head", "middle"])
    max_perplexity: float | None = Field(None, gt=0, description="also drop documents above this perplexity")
    drop_unscored: bool = Field(False, description="drop documents of languages without a model")


class ClassifierThresholds(StrictModel):
    enabled: bool = True
    min_hq_prob: float | None = Field(None, ge=0.0, le=1.0)
    keep_top_fraction: float | None = Field(None, gt=0.0, le=1.0, description=(
        "keep this share with the highest hq_prob (DCLM keeps 0.1); ranked over the whole corpus"))


class QualityFilterConfig(StrictModel):
    """Thresholds only: changing them reruns the filter step, never the scoring."""
    gopher_quality: GopherQualityThresholds = Field(default_factory=GopherQualityThresholds)
    gopher_repetition: GopherRepetitionThresholds = Field(default_factory=GopherRepetitionThresholds)
    c4: C4Thresholds = Field(default_factory=C4Thresholds)
    fineweb: FineWebThresholds = Field(default_factory=FineWebThresholds)
    kenlm: KenlmThresholds = Field(default_factory=KenlmThresholds)
    classifier: ClassifierThresholds = Field(default_factory=ClassifierThresholds)
    examples_per_reason: int = Field(3, ge=0, description="kept and dropped examples in the data card")
    output_shard_bytes: int = Field(64 << 20, ge=0, description=(
        "scored shards are filtered in runs of consecutive shards of about this many bytes (about 8 even runs while "
        "there are shards enough), one output shard per run, so that heavy dedup and filtering do not leave the "
        "stages after it many tiny shards; 0: one output shard per scored shard"))


class C4LineRules(StrictModel):
    """Which lines count toward C4's sentence total (they decide the `c4_sentences` attribute)."""
    split_paragraph: bool = True
    remove_citations: bool = True
    filter_no_terminal_punct: bool = True
    min_words_per_line: int = 3
    max_word_length: int = 1000
    filter_javascript: bool = True
    filter_policy: bool = True


class KenlmConfig(StrictModel):
    """CCNet-style perplexity: SentencePiece + 5-gram KenLM per language, trained on reference text."""
    enabled: bool = True
    reference: dict[str, list[str]] = Field(default_factory=lambda: {"en": ["{data_dir}/reference"]}, description=(
        "language -> reference text files or directories (*.txt, *.raw); one model per language"))
    order: int = Field(5, ge=2, le=6)
    vocab_size: int = Field(8000, ge=100, description="SentencePiece pieces of the perplexity model")
    min_reference_chars: int = Field(200_000, ge=1, description="less reference text than this is refused")
    prune: list[int] = Field(default_factory=lambda: [0, 0, 1], description="lmplz --prune counts per order")
    bucket_percentiles: tuple[float, float] = Field((33.3, 66.6), description=(
        "head / middle / tail cut points by perplexity percentile per language (CCNet's thirds)"))
    bin_dir: str | None = Field(None, description="where lmplz and build_binary are; default: beside python, then PATH")
    heldout_ngrams: str | None = Field(None, description=(
        "an evaluation suite's n-gram file (set by an ablation): reference lines sharing an n-gram with it are "
        "left out of training, and counted"))


class ClassifierConfig(StrictModel):
    """fastText quality classifier: reference text (positive) vs raw extraction output (negative)."""
    enabled: bool = True
    # Encyclopedic and formal prose. Gutenberg fiction and Shakespeare are left out on purpose: with them the
    # classifier learns "old literary style" and ranks informal web text (film scripts, chat) above an
    # encyclopedia entry: AUC 0.31 on the quality_labelled text with them (`git show
    # 76e054c^:benchmarks/results/quality.json`, 2026-11-23 03:59, `classifier_quality_labelled.auc`), 0.98 without
    # (benchmarks/results/quality.json, 2026-11-24 23:13).
    positives: list[str] = Field(default_factory=lambda: ["{data_dir}/reference/wikitext-2",
                                                          "{data_dir}/reference/speeches_nltk"])
    positive_chunk_chars: int = Field(2000, ge=100, description="reference text is cut into examples this long")
    max_examples_per_class: int = Field(5000, ge=10)
    heldout_fraction: float = Field(0.1, gt=0.0, lt=0.5)
    epoch: int = Field(5, ge=1)
    lr: float = Field(0.1, gt=0.0)
    word_ngrams: int = Field(2, ge=1)
    dim: int = Field(64, ge=8)
    bucket: int = Field(250_000, ge=1, description=(
        "hash buckets for word n-grams (fastText's -bucket); the model file is about bucket x dim x 4 bytes"))
    min_examples: int = Field(50, ge=2, description="fewer examples per class than this is refused")
    evaluation_positives: list[str] = Field(default_factory=lambda: [
        "{data_dir}/quality_labelled/cs336_fixtures/high_quality_wiki_reference.txt"], description=(
        "labelled text never trained on, for the report's second evaluation"))
    evaluation_negatives: list[str] = Field(default_factory=lambda: [
        "{data_dir}/quality_labelled/cs336_fixtures/low_quality_cc.txt", "{data_dir}/quality_labelled/nltk_webtext"])
    seed: int = Field(0, ge=0)
    heldout_ngrams: str | None = Field(None, description=(
        "an evaluation suite's n-gram file (set by an ablation): reference lines sharing an n-gram with it are "
        "left out of training, and counted"))


class PiiConfig(StrictModel):
    """Redaction of the kept documents, after scoring (tasks/quality/pii.py)."""
    enabled: bool = Field(True, description="replace PII in kept documents with fixed placeholders, as FineWeb does")
    emails: bool = Field(True, description="email addresses -> |||EMAIL_ADDRESS|||")
    ips: bool = Field(True, description="public IPv4 and IPv6 addresses -> |||IP_ADDRESS|||")
    phones: bool = Field(True, description="international (+...) and North American phone numbers -> |||PHONE_NUMBER|||")


class QualityConfig(StrictModel):
    enabled: bool = True
    c4_lines: C4LineRules = Field(default_factory=C4LineRules)
    bad_words_dir: str = Field("{data_dir}/quality_labelled/ldnoobw", description="LDNOOBW lists, one file per language")
    kenlm: KenlmConfig = Field(default_factory=KenlmConfig)
    classifier: ClassifierConfig = Field(default_factory=ClassifierConfig)
    filter: QualityFilterConfig = Field(default_factory=QualityFilterConfig)
    pii: PiiConfig = Field(default_factory=PiiConfig)
    max_chars: int = Field(1_000_000, ge=1000, description=(
        "longer texts are scored on their first max_chars characters (a counted note), so one giant page "
        "cannot stall a worker"))

    @field_validator("kenlm")
    @classmethod
    def _ordered_percentiles(cls, kenlm: KenlmConfig) -> KenlmConfig:
        low, high = kenlm.bucket_percentiles
        if not 0 < low < high < 100:
            raise ValueError(f"bucket_percentiles must rise within (0, 100), got {kenlm.bucket_percentiles}")
        return kenlm

"""Recipe models for the dedup stage: exact, URL, MinHash-LSH near-duplicate and repeated-paragraph removal."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from configs.base import StrictModel

# Scripts written without spaces between words: shingled by characters, not words.
CHARACTER_SHINGLE_LANGUAGES = ("zh", "ja", "th", "lo", "km", "my", "bo")


class TextNormalization(StrictModel):
    """How text is normalized before hashing (exact dedup) and shingling (MinHash)."""
    lowercase: bool = True
    collapse_whitespace: bool = True
    strip_punctuation: bool = False
    digits_to_zero: bool = False


class ExactDedupConfig(StrictModel):
    enabled: bool = True
    normalization: TextNormalization = Field(default_factory=TextNormalization)


class UrlDedupConfig(StrictModel):
    """Re-crawls of the same page: the same normalized URL (scheme, `www.`, fragment, tracking parameters and
    parameter order ignored) within the scope; the newest capture is kept."""
    enabled: bool = True


class MinHashConfig(StrictModel):
    enabled: bool = True
    # Word bigrams, not FineWeb's 5-grams: one edited word breaks five 5-grams but two bigrams, so pages copied
    # with edits stay near each other (benchmarks/results/dedup.json, `by_recipe.five_grams` -> `full`: residual
    # duplicate share 0.0398 -> 0.0064).
    ngram: int = Field(2, ge=1, description="shingle size in words")
    character_ngram: int = Field(5, ge=1, description="shingle size in characters, for `character_languages`")
    character_languages: list[str] = Field(default_factory=lambda: list(CHARACTER_SHINGLE_LANGUAGES))
    seed: int = Field(1, ge=0)
    bands: int | None = Field(28, ge=1, description="LSH bands; set with rows, or leave both null and set "
                                                   "target_jaccard to derive them")
    rows: int | None = Field(4, ge=1, description="signature values per band")
    target_jaccard: float | None = Field(None, gt=0.0, lt=1.0, description="derive bands x rows for this Jaccard "
                                                                          "(datasketch's optimisation)")
    num_perm: int = Field(112, ge=1, description="signature length when bands x rows are derived")
    false_positive_weight: float = Field(0.5, ge=0.0, le=1.0)
    false_negative_weight: float = Field(0.5, ge=0.0, le=1.0)
    verify_jaccard: float | None = Field(0.65, ge=0.0, le=1.0, description=(
        "an LSH candidate pair becomes a duplicate edge only if the Jaccard estimated from the full signatures "
        "reaches this; null trusts every LSH collision (datatrove's behaviour)"))
    normalization: TextNormalization = Field(
        default_factory=lambda: TextNormalization(strip_punctuation=True, digits_to_zero=True))
    max_pairs_bucket: int = Field(64, ge=2, description=(
        "a band bucket with more documents is verified as a chain and a star, not all pairs"))

    @model_validator(mode="after")
    def _bands_or_target(self) -> "MinHashConfig":
        given = (self.bands is not None, self.rows is not None)
        if self.target_jaccard is None and given != (True, True):
            raise ValueError("set both bands and rows, or set target_jaccard (and bands: null, rows: null)")
        if self.target_jaccard is not None and given != (False, False):
            raise ValueError("target_jaccard derives bands and rows: set bands: null and rows: null with it")
        return self

    def shingle_size(self, lang: str) -> int:
        return self.character_ngram if lang in self.character_languages else self.ngram

    def lsh_shape(self) -> tuple[int, int]:
        """(bands, rows): as given, or datasketch's optimum for the target Jaccard and error weights."""
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        from datasketch import MinHashLSH

        lsh = MinHashLSH(threshold=self.target_jaccard, num_perm=self.num_perm,
                         weights=(self.false_positive_weight, self.false_negative_weight))
        return lsh.b, lsh.r


class ParagraphDedupConfig(StrictModel):
    """CCNet-style removal of lines (paragraphs) repeated across the corpus: site chrome, cookie notices."""
    enabled: bool = True
    normalization: TextNormalization = Field(
        default_factory=lambda: TextNormalization(digits_to_zero=True),
        description="lines equal after it are one paragraph (as CCNet: '© 2019 ACME' = '© 2023 Acme')")
    min_documents: int = Field(3, ge=2, description="a line in at least this many distinct kept documents is removed")
    min_line_chars: int = Field(1, ge=1, description="shorter lines are never counted or removed")
    letters_required: bool = Field(True, description=(
        "lines without a letter (`}`, `0`, `...`, separators) are never counted or removed: they carry no "
        "boilerplate text, and removing them breaks code and tables"))

    def counts_line(self, key: str) -> bool:
        """Whether a normalized line takes part in repeated-paragraph counting and removal."""
        return len(key) >= self.min_line_chars and (not self.letters_required or any(ch.isalpha() for ch in key))
    min_chars_after: int = Field(1, ge=1, description="documents left shorter are dropped "
                                                     "(`too_short_after_paragraph_dedup`)")


class SubstringDedupConfig(StrictModel):
    """Lee et al. 2021's ExactSubstr by hashed word windows (tasks/dedup/substrings.py): spans of at least
    `min_words` words found in two or more distinct kept documents stay in one and are cut from the others."""
    enabled: bool = Field(False, description=(
        "off by default: it shuffles 20 bytes per word of the corpus, about three times the text itself"))
    min_words: int = Field(50, ge=8, description="the shortest repeated span cut (Lee et al.: 50 tokens)")
    min_chars_after: int = Field(1, ge=1, description="documents left shorter are dropped "
                                                     "(`too_short_after_substring_dedup`)")


class DedupConfig(StrictModel):
    enabled: bool = True
    scope: Literal["global", "source"] = Field("global", description="compare across all sources, or within "
                                                                      "each `source` (crawl dump) only")
    keep: Literal["first_seen", "newest", "longest"] = Field("first_seen", description=(
        "which document of a duplicate cluster stays: earliest capture, latest capture or longest text; "
        "ties go to the smallest id"))
    buckets: int = Field(8, ge=1, le=4096, description="partitions of each shuffle (hash buckets)")
    exact: ExactDedupConfig = Field(default_factory=ExactDedupConfig)
    url: UrlDedupConfig = Field(default_factory=UrlDedupConfig)
    minhash: MinHashConfig = Field(default_factory=MinHashConfig)
    paragraphs: ParagraphDedupConfig = Field(default_factory=ParagraphDedupConfig)
    substring: SubstringDedupConfig = Field(default_factory=SubstringDedupConfig)

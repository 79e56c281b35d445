"""docs/recipe.md is what `sluice recipe-reference` prints from the config models today."""
from __future__ import annotations

from pathlib import Path

from configs.reference import reference_markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "recipe.md"


def test_the_committed_reference_matches_the_models():
    assert DOC.read_text(encoding="utf-8") == reference_markdown(), \
        "docs/recipe.md is stale: run `.venv/bin/sluice recipe-reference > docs/recipe.md`"


def test_every_recipe_section_and_a_nested_field_are_listed():
    text = reference_markdown()
    for field in ("`extract.langid.min_score`", "`dedup.minhash.ngram`", "`train.optimizer.lr`", "`mixture.token_budget`",
                  "`seeds`", "`eval.domains`"):
        assert field in text, field

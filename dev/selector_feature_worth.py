"""What each group of the block selector's features is worth: the trainer's cross-validation (dev/block_selector.py)
rerun with the group's columns set to 0, which no tree can split on, against all of them.

    .venv/bin/python -m dev.selector_feature_worth        # ~3 min on 2 cores

Prints, per group dropped, the best threshold's worst-set gain over main content and, at the shipped threshold, the
worst and the mean over the labelled sets. Differences under ~0.005 are within the folds' noise."""
from __future__ import annotations

import dataclasses
import sys
from statistics import fmean

from dev.block_selector import (CandidatePage, best_threshold, candidate_pages, cross_validated_scores,
                                gains_over_main_content)
from storage.locations import shared_data_dir
from tasks.extract.model_files import BLOCK_SELECTOR, load_model
from tasks.extract.selector_features import FEATURE_NAMES

GROUPS = {
    "nothing": (),
    "the block's own text": FEATURE_NAMES[1:12] + ("log_chars",),
    "its place and neighbours": ("position", "log_chars_before", "log_chars_after", "link_density_before",
                                 "link_density_after", "share_of_page_chars"),
    "repeats of its text": ("log_repeats",),
    "main content's kept flag and span": tuple(name for name in FEATURE_NAMES if "kept" in name),
    "product JSON-LD": ("product_page", "kept_on_product_page"),
    "after main content's last block": ("after_kept_span",),
}


def without(pages: list[CandidatePage], names: tuple[str, ...]) -> list[CandidatePage]:
    columns = [FEATURE_NAMES.index(name) for name in names]
    dropped = []
    for page in pages:
        features = page.features.copy()
        features[:, columns] = 0.0
        dropped.append(dataclasses.replace(page, features=features))
    return dropped


def main() -> int:
    gold, trafilatura = candidate_pages(shared_data_dir())
    shipped = load_model(BLOCK_SELECTOR, FEATURE_NAMES)["threshold"]
    for group, names in GROUPS.items():
        pages = without(gold, names)
        gains = gains_over_main_content(cross_validated_scores(pages, without(trafilatura, names)), pages)
        best = best_threshold(gains)
        worst = min(gains[best], key=gains[best].get)
        print(f"without {group}: worst-set gain {gains[best][worst]:+.4f} at its best threshold {best} ({worst}); "
              f"at {shipped}: worst {min(gains[shipped].values()):+.4f}, mean {fmean(gains[shipped].values()):+.4f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

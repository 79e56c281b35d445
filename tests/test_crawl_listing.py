"""Common Crawl input: a `warc.paths.gz` listing joined onto a base URL, cut by `limit` or a seeded `sample`."""
from __future__ import annotations

import gzip

import pytest

from configs.schema import load_recipe, parse_recipe
from storage.crawl_listing import input_urls, listed_inputs

SEGMENT = "crawl-data/CC-MAIN-2024-22/segments/1715971057216.39/warc"


@pytest.fixture
def local_crawl(tmp_path, data_dir):
    """A local mirror laid out as Common Crawl's bucket: 6 WARC files and a gzipped listing of them."""
    real = (data_dir / "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz").read_bytes()
    lines = []
    for index in range(6):
        relative = f"{SEGMENT}/CC-MAIN-20240517233122-20240518023122-{index:05d}.warc.gz"
        (tmp_path / "mirror" / SEGMENT).mkdir(parents=True, exist_ok=True)
        (tmp_path / "mirror" / relative).write_bytes(real)
        lines.append(relative)
    listing = tmp_path / "warc.paths.gz"
    listing.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return listing, tmp_path / "mirror", lines


def test_limit_takes_the_first_files_under_the_base(local_crawl):
    listing, mirror, lines = local_crawl
    assert listed_inputs(str(listing), str(mirror), limit=2) == [str(mirror / line) for line in lines[:2]]
    assert len(listed_inputs(str(listing), str(mirror))) == 6


def test_sample_is_seeded_in_listing_order(local_crawl):
    listing, mirror, lines = local_crawl
    first = listed_inputs(str(listing), str(mirror), sample=3, seed=7)
    assert first == listed_inputs(str(listing), str(mirror), sample=3, seed=7)
    assert len(first) == 3 and first == sorted(first)
    seeds = {tuple(listed_inputs(str(listing), str(mirror), sample=3, seed=seed)) for seed in range(10)}
    assert len(seeds) > 1


def test_a_remote_base_stays_a_url(local_crawl):
    listing, _, lines = local_crawl
    urls = listed_inputs(str(listing), "s3://commoncrawl/", limit=1)
    assert urls == [f"s3://commoncrawl/{lines[0]}"]


def test_recipe_with_a_listing_resolves_its_inputs(local_crawl):
    listing, mirror, lines = local_crawl
    recipe = parse_recipe({"name": "cc", "input": {"listing": {"url": str(listing), "base_url": str(mirror),
                                                               "limit": 4}}})
    assert input_urls(recipe.input) == [str(mirror / line) for line in lines[:4]]


def test_a_missing_or_empty_listing_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="listing"):
        listed_inputs(str(tmp_path / "warc.paths.gz"), str(tmp_path))
    (tmp_path / "empty.paths").write_text("\n# nothing\n")
    with pytest.raises(ValueError, match="lists no files"):
        listed_inputs(str(tmp_path / "empty.paths"), str(tmp_path))


def test_the_commoncrawl_recipe_reads_a_published_listing():
    recipe = load_recipe("configs/commoncrawl.yaml")
    assert recipe.input.listing.url.endswith("/warc.paths.gz") and recipe.input.listing.sample

"""remove_repeated_lines: the shard-level pass over handcrafted shards and one real same-host crawl."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from pydantic import ValidationError

from configs.html import BoilerplateConfig, HtmlTextConfig
from tasks.extract.boilerplate import line_key, remove_repeated_lines

HOST_RULE = BoilerplateConfig(enabled=True, min_host_documents=3)
MENU = "Home\nAbout us\nAccept cookies"


WORDS = ("apples", "bridges", "comets", "dunes", "engines", "ferns")


def article(number: int) -> str:
    """Two lines unique to document `number` (digits alone would not do: line keys map digits to 0)."""
    return f"A story about {WORDS[number]}.\nIt says something new about {WORDS[number]} and nothing else."


def test_line_repeated_on_many_pages_of_a_host_is_removed_and_unique_content_kept():
    texts = [f"{MENU}\n{article(n)}" for n in range(5)]
    cleaned, removed = remove_repeated_lines(texts, ["news.example"] * 5, HOST_RULE)
    assert cleaned == [article(n) for n in range(5)]
    assert removed == 3 * 5


def test_host_rule_counts_per_host_only():
    texts = [f"{MENU}\n{article(n)}" for n in range(4)]
    hosts = ["a.example", "a.example", "b.example", "c.example"]  # the menu is on 2 pages of one host at most
    assert remove_repeated_lines(texts, hosts, HOST_RULE) == (texts, 0)
    shard_wide = BoilerplateConfig(enabled=True, min_shard_documents=4)
    cleaned, removed = remove_repeated_lines(texts, hosts, shard_wide)
    assert cleaned == [article(n) for n in range(4)] and removed == 12


def test_unknown_host_takes_part_only_in_the_shard_wide_rule():
    texts = [f"{MENU}\n{article(n)}" for n in range(4)]
    assert remove_repeated_lines(texts, [""] * 4, HOST_RULE) == (texts, 0)


def test_exact_duplicate_documents_count_once():
    texts = [f"{MENU}\n{article(1)}"] * 3 + [f"{MENU}\n{article(2)}"]
    cleaned, removed = remove_repeated_lines(texts, ["a.example"] * 4, HOST_RULE)
    assert (cleaned, removed) == (texts, 0)  # two distinct documents: below the threshold of 3


def test_lines_match_up_to_case_digits_and_spacing():
    assert line_key("  © 2019   ACME Corp ") == line_key("© 2023 acme corp")
    texts = [f"© {2019 + n}  ACME Corp\n{article(n)}" for n in range(3)]
    cleaned, removed = remove_repeated_lines(texts, ["acme.example"] * 3, HOST_RULE)
    assert cleaned == [article(n) for n in range(3)] and removed == 3


def test_blank_lines_are_neither_counted_nor_removed():
    texts = [f"{article(n)}\n\n{MENU}" for n in range(3)]
    cleaned, _ = remove_repeated_lines(texts, ["a.example"] * 3, HOST_RULE)
    assert cleaned == [f"{article(n)}\n" for n in range(3)]


def test_document_made_only_of_repeated_lines_is_kept_or_emptied_as_configured():
    texts = [f"{MENU}\n{article(n)}" for n in range(3)] + [MENU]
    hosts = ["a.example"] * 4
    cleaned, removed = remove_repeated_lines(texts, hosts, HOST_RULE)
    assert cleaned[3] == MENU and removed == 9  # kept unchanged, its lines not counted as removed
    emptying = HOST_RULE.model_copy(update={"keep_emptied_documents": False})
    cleaned, removed = remove_repeated_lines(texts, hosts, emptying)
    assert cleaned[3] == "" and removed == 12  # the caller drops it as an empty text


def test_disabled_pass_changes_nothing():
    texts = [f"{MENU}\n{article(n)}" for n in range(5)]
    assert remove_repeated_lines(texts, ["a.example"] * 5, BoilerplateConfig(enabled=False)) == (texts, 0)


def test_texts_and_hosts_must_pair_up():
    with pytest.raises(ValueError, match="2 texts but 1 hosts"):
        remove_repeated_lines(["a", "b"], ["h"], HOST_RULE)


@pytest.mark.parametrize("values, field", [
    ({"min_host_documents": 1}, "min_host_documents"),
    ({"min_shard_documents": 0}, "min_shard_documents"),
    ({"enabled": "sometimes"}, "enabled"),
    ({"min_pages": 3}, "min_pages"),
])
def test_bad_config_values_name_the_field(values, field):
    with pytest.raises(ValidationError) as error:
        BoilerplateConfig(**values)
    assert field in str(error.value)


def test_real_same_host_crawl_loses_its_site_chrome(data_dir):
    """archive.org pages crawled in 2008: the login bar is on most pages of the host and goes; article text stays."""
    from tasks.extract.documents import NotADocument, is_candidate, payload_of
    from tasks.extract.html_text import html_to_text
    from tasks.extract.records import RawRecord, read_records

    texts, hosts = [], []
    crawl = data_dir / "warc" / "webarchive" / "archivesunleashed-aut" / "example.warc.gz"
    for record in read_records(str(crawl), 8 << 20):
        if isinstance(record, RawRecord) and is_candidate(record):
            try:
                payload = payload_of(record)
            except NotADocument:
                continue
            text = html_to_text(payload.markup, HtmlTextConfig())
            if text.strip():
                texts.append(text)
                hosts.append((urlsplit(record.target_uri).hostname or "").lower())
    cleaned, removed = remove_repeated_lines(texts, hosts, BoilerplateConfig())
    login_bar = "UploadAnonymous User (login or join us)"
    assert sum(login_bar in text for text in texts) > 10
    # Gone everywhere except from documents made only of repeated lines, which are kept unchanged.
    assert all(login_bar not in after or after == before for before, after in zip(texts, cleaned))
    assert sum(login_bar in text for text in cleaned) <= 3
    assert 0 < removed < sum(text.count("\n") + 1 for text in texts) // 5
    kept_chars = sum(len(text) for text in cleaned) / sum(len(text) for text in texts)
    assert kept_chars > 0.9

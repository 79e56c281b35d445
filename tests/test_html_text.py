"""html_to_text on real gold pages (trafilatura_eval) and on handcrafted markup; HtmlTextConfig validation."""
from __future__ import annotations

import gzip
import json

import pytest
from pydantic import ValidationError
from resiliparse.parse.encoding import bytes_to_str, detect_encoding

from configs.html import HtmlTextConfig
from tasks.extract.html_text import html_to_text, parse_blocks

DEFAULT = HtmlTextConfig()
WHOLE_PAGE = HtmlTextConfig(main_content=False, comments=True, alt_texts=True, skip_elements=[],
                            max_link_density=None, drop_orphan_headings=False, tail_max_words=0, block_selector=False)
# Main content and the rule filters without the block selector, which would choose again from the whole page
MAIN_CONTENT = HtmlTextConfig(block_selector=False)
# Real pages whose `without` gold snippets are footer / navigation / widget text present in the page's markup.
REAL_PAGES = ("pages/0144_dbjr.de.bundespraesident.html.gz", "pages/0444_mdavis.xyz.supermarket.html.gz",
              "pages/0100_wiki.piratenpartei.de.stammtisch.html.gz")
# A page on which resiliparse's main-content heuristics keep nothing.
MAIN_CONTENT_MISS = "pages/0567_automobilwoche.de-VW-Betriebsversammlung.html.gz"


def normalise(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def gold(data_dir) -> dict[str, dict]:
    folder = data_dir / "html" / "trafilatura_eval"
    wanted = set(REAL_PAGES) | {MAIN_CONTENT_MISS}
    pages = {}
    with open(folder / "manifest.jsonl", encoding="utf-8") as manifest:
        for line in manifest:
            entry = json.loads(line)
            if entry["file"] in wanted:
                raw = gzip.decompress((folder / entry["file"]).read_bytes())
                pages[entry["file"]] = entry | {"html": bytes_to_str(raw, detect_encoding(raw))}
    return pages


@pytest.mark.parametrize("name", REAL_PAGES)
def test_real_page_keeps_main_text_and_drops_site_chrome(gold, name):
    page = gold[name]
    text = normalise(html_to_text(page["html"], DEFAULT))
    assert all(normalise(snippet) in text for snippet in page["with"])
    assert not [snippet for snippet in page["without"] if normalise(snippet) in text]
    whole_page = normalise(html_to_text(page["html"], WHOLE_PAGE))
    assert all(normalise(snippet) in whole_page for snippet in page["without"])  # they were there to drop


def test_whole_page_fallback_when_main_content_finds_nothing(gold):
    page = gold[MAIN_CONTENT_MISS]
    assert html_to_text(page["html"], HtmlTextConfig(fallback_min_chars=0, block_selector=False)) == ""
    for config in (MAIN_CONTENT, DEFAULT):
        text = normalise(html_to_text(page["html"], config))
        assert all(normalise(snippet) in text for snippet in page["with"])


def test_trafilatura_engine_extracts_the_article(gold):
    page = gold[REAL_PAGES[1]]
    text = normalise(html_to_text(page["html"], HtmlTextConfig(engine="trafilatura")))
    assert all(normalise(snippet) in text for snippet in page["with"])


ARTICLE = " ".join(["The committee met on Monday and agreed on the budget for the coming year."] * 3)
PAGE = f"""<html><head><title>t</title><script>var x = 1;</script></head><body>
<div class="menu"><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li>
<li><a href="/contact">Contact us today</a></li></ul></div>
<article><h1>Budget agreed</h1><p>{ARTICLE}</p><p>{ARTICLE} <a href="/minutes">Read the minutes</a>.</p>
<h2>Details</h2><p>{ARTICLE}</p><pre>  indented code</pre>
<h3>More on this topic</h3><ul><li><a href="/a">Council elections next month</a></li>
<li><a href="/b">Mayor opens the new library</a></li></ul>
<p>Share this</p></article>
<footer><p>Imprint · Privacy</p></footer></body></html>"""


def test_handcrafted_page_keeps_prose_and_drops_menus_orphans_and_tail():
    lines = html_to_text(PAGE, DEFAULT).split("\n")
    assert lines[0] == "Budget agreed" and "Details" in lines
    assert sum(ARTICLE in line for line in lines) == 3
    assert "  indented code" in lines  # preformatted text keeps its indentation
    for boilerplate in ("Home", "Contact us today", "More on this topic", "Mayor opens", "Share this", "Imprint"):
        assert boilerplate not in "\n".join(lines), boilerplate


def test_link_density_filter_drops_link_lists_inside_the_article():
    page = (f"<article><p>{ARTICLE}</p><ul><li><a href='/a'>Council elections next month</a></li>"
            f"<li><a href='/b'>Mayor opens the new library</a></li></ul><p>{ARTICLE}</p></article>")
    assert "• Mayor opens the new library" in html_to_text(page, MAIN_CONTENT)
    assert "Mayor" not in html_to_text(page, HtmlTextConfig(max_link_density=0.5, block_selector=False))


def test_the_boilerplate_classifier_drops_a_photo_credit_inside_the_article_and_keeps_the_prose():
    mayor = "The mayor said the plan, which includes new schools, roads and parks, would be reviewed next spring."
    credit = "Photo: Jane Doe / Reuters | 12.03.2021"
    page = (f"<article><h1>Budget agreed</h1><p>{credit}</p><p>{ARTICLE}</p><p>{ARTICLE}</p><p>{mayor}</p>"
            f"<p>{ARTICLE}</p></article>")
    assert credit in html_to_text(page, DEFAULT)                 # the rule filters keep it
    lines = html_to_text(page, HtmlTextConfig(max_boilerplate_probability=0.9)).split("\n")
    assert credit not in lines
    assert sum(line == ARTICLE for line in lines) == 3 and mayor in lines


def test_retraining_on_the_even_gold_pages_gives_the_committed_weights(data_dir):
    """The classifier's weights are generated from the shared data, not tuned by hand: the trainer reproduces
    them (and a change to the block features without retraining fails here and at first use)."""
    from dev.boilerplate_classifier import fit, labelled_blocks
    from tasks.extract.block_features import FEATURE_NAMES
    from tasks.extract.model_files import BOILERPLATE_CLASSIFIER, load_model

    features, labels = labelled_blocks(data_dir)
    bias, weights = fit(features, labels)
    committed = load_model(BOILERPLATE_CLASSIFIER, FEATURE_NAMES)
    assert committed["blocks"] == len(labels) and committed["boilerplate_blocks"] == int(labels.sum())
    assert bias == pytest.approx(committed["bias"], rel=1e-9)
    assert list(weights) == pytest.approx(committed["weights"], rel=1e-9, abs=1e-12)


def test_each_post_filter_can_be_switched_off():
    text = html_to_text(PAGE, WHOLE_PAGE)
    for kept in ("Contact us today", "More on this topic", "• Mayor opens the new library", "Share this", "Imprint"):
        assert kept in text


def test_parse_blocks_links_headings_bullets():
    markup = ('<h2>Title</h2>\n<p>plain <a href="/x">link</a> text</p>\n<a href=""> after empty link\n'
              '<ol>\n  <li><a href="/1">first</a></li>\n  <li>second &amp; last</li>\n</ol>')
    blocks = parse_blocks(markup)
    assert [block.text for block in blocks] == ["Title", "plain link text", "after empty link",
                                                "1. first", "2. second & last"]
    assert blocks[0].heading_level == 2 and blocks[1].heading_level == 0
    assert blocks[2].link_chars == 0  # resiliparse writes no </a> for a link without text
    assert blocks[3].link_density == 1.0 and 0 < blocks[1].link_density < 0.5


@pytest.mark.parametrize("garbage", [
    "", "   ", "\x00\x01\x02", "<<<>>>&&&;", "<html><body><div><p>unclosed <b><i>tags",
    "<div>" * 500 + "deep" + "</div>" * 10, "<a href=x>" * 500, bytes(range(256)).decode("latin-1"),
    "<table>" * 300 + "<td>cell", "<svg><script>alert(1)</script></svg>", "\ud800 lone surrogate",
    None, b"<p>bytes, not str</p>",
])
@pytest.mark.parametrize("engine", ["resiliparse", "trafilatura"])
def test_never_raises_on_garbage(garbage, engine):
    assert isinstance(html_to_text(garbage, HtmlTextConfig(engine=engine)), str)


@pytest.mark.parametrize("values, field", [
    ({"engine": "lynx"}, "engine"),
    ({"max_link_density": 1.5}, "max_link_density"),
    ({"max_boilerplate_probability": 1.0}, "max_boilerplate_probability"),
    ({"tail_max_words": -1}, "tail_max_words"),
    ({"fallback_min_chars": "many"}, "fallback_min_chars"),
    ({"skip_elements": ["div[[["]}, "skip_elements"),
    ({"main_contnet": True}, "main_contnet"),
])
def test_bad_config_values_name_the_field(values, field):
    with pytest.raises(ValidationError) as error:
        HtmlTextConfig(**values)
    assert field in str(error.value)


def test_defaults_validate_and_round_trip():
    assert HtmlTextConfig.model_validate(DEFAULT.model_dump()) == DEFAULT
    assert HtmlTextConfig(max_link_density=None).max_link_density is None


def test_deeply_nested_pages_skip_main_content_heuristics():
    from resiliparse.parse.html import HTMLTree

    from tasks.extract.html_text import _nests_deeper_than

    depth = 5000  # main-content extraction alone takes ~0.7 s on this page
    page = ("<html><body>" + "<div>" * depth + "<p>the only sentence on this hostile page</p>" + "</div>" * depth
            + "</body></html>")
    assert _nests_deeper_than(HTMLTree.parse(page), 256)
    assert not _nests_deeper_than(HTMLTree.parse("<html><body><div><p>flat</p></div></body></html>"), 256)
    assert "the only sentence" in html_to_text(page, HtmlTextConfig())

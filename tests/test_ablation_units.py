"""The ablation's parts on their own: n-gram contamination, the evaluation suite, decontamination of a shard and of
the quality references, exact bits per byte against a hand computation, the statistics, and the ablation file's
validation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml

from configs.ablation import load_ablation, parse_ablation
from configs.evaluation import EvalSuiteConfig
from configs.parsing import RecipeError
from storage.document_shard import read_documents, write_documents
from tasks.evaluation.charts import seed_curves
from tasks.evaluation.compare import RunScore, compare, table_markdown, verdict
from tasks.evaluation.decontaminate import DecontaminateJob, decontaminate_shard
from tasks.evaluation.ngrams import NgramSet, ngram_hashes
from tasks.evaluation.suite import build_suite, read_suite
from tasks.quality.reference import without_heldout
from training.exact_bpb import SuiteTokens, bits_per_byte_by_domain, model_window_nll, suite_nll
from training.model import Transformer
from training.shapes import ModelConfig

SPEECH = "reference/speeches_nltk/inaugural/2005-Bush.txt"


def test_ngrams_find_a_copy_whatever_its_case_spacing_and_punctuation(data_dir):
    text = (data_dir / SPEECH).read_text(encoding="utf-8", errors="replace")
    suite = NgramSet.of_texts([text])
    paragraph = max(text.splitlines(), key=len)
    assert suite.shared(f"Some page chrome.\n{paragraph.upper().replace(',', ' ,')}\nMore chrome.")
    assert suite.shared("A completely different text about gardening and the weather in spring, twelve words more "
                        "than that, with nothing shared at all beyond common words.") == 0
    assert ngram_hashes("too short to hold a thirteen word window") .size == 0


def _suite_config(data_dir) -> EvalSuiteConfig:
    return EvalSuiteConfig(domains={
        "speeches": {"paths": [str(data_dir / SPEECH)], "max_chars": 3000},
        "encyclopedic": {"paths": [str(data_dir / "reference/wikitext-2/wiki.test.raw")],
                         "format": "wikitext_articles", "max_chars": 3000},
        "web": {"paths": [str(data_dir / "html/mozilla_readability/*/expected.html.gz")], "format": "html",
                "max_chars": 3000}})


def test_suite_is_fixed_by_its_config_and_holds_every_domain(data_dir, tmp_path, lid_model):
    first = build_suite(_suite_config(data_dir), str(tmp_path / "a"))
    build_suite(_suite_config(data_dir), str(tmp_path / "b"))
    assert (tmp_path / "a" / "suite.jsonl").read_bytes() == (tmp_path / "b" / "suite.jsonl").read_bytes()
    assert set(first["domains"]) == {"speeches", "encyclopedic", "web"}
    assert all(0 < row["chars"] <= 3000 for row in first["domains"].values())
    documents = read_suite(str(tmp_path / "a" / "suite.jsonl"))
    assert all(doc["text"] and "<" not in doc["text"][:200] for doc in documents if doc["domain"] == "web")
    config = _suite_config(data_dir)
    config.domains["web"].languages, config.domains["web"].max_chars = ["en"], 60000
    with pytest.raises(ValueError, match="language-ID model"):
        build_suite(config, str(tmp_path / "c"))
    build_suite(config, str(tmp_path / "c"), lid_model)
    english = [doc for doc in read_suite(str(tmp_path / "c" / "suite.jsonl")) if doc["domain"] == "web"]
    names = {doc["name"].split("/")[0] for doc in english}
    assert len(english) >= 5 and not names & {"hukumusume", "pixnet", "qq", "lemonde-1", "aktualne"}


def test_decontamination_removes_a_planted_copy_in_any_shard_and_counts_it(data_dir, tmp_path):
    build_suite(_suite_config(data_dir), str(tmp_path / "suite"))
    eval_text = read_suite(str(tmp_path / "suite" / "suite.jsonl"))[0]["text"]
    clean = (data_dir / "reference/speeches_nltk/inaugural/1861-Lincoln.txt").read_text(encoding="utf-8", errors="replace")
    planted = "Welcome to our blog!\n" + eval_text[:1500] + "\nShare this post."
    results = []
    for shard, texts in enumerate([[clean, planted], [planted, clean, clean[:400]]]):
        rows = {"id": [f"s{shard}-{i}" for i in range(len(texts))], "url": [f"http://x/{shard}/{i}" for i in
                                                                             range(len(texts))], "text": texts}
        write_documents(rows | {name: [None] * len(texts) for name in ("lang", "lang_score", "source", "warc_path",
                                                                       "warc_record_id", "warc_offset", "warc_date",
                                                                       "charset")}, str(tmp_path / f"in{shard}.parquet"))
        results.append(decontaminate_shard(DecontaminateJob(
            str(tmp_path / f"in{shard}.parquet"), str(tmp_path / f"out{shard}.parquet"),
            str(tmp_path / f"removed{shard}.parquet"), str(tmp_path / "suite" / "ngrams.npz"))))
    assert [result["drops"] for result in results] == [{"eval_contamination": 1}, {"eval_contamination": 1}]
    assert [result["documents_out"] for result in results] == [1, 2]
    removed = read_documents(str(tmp_path / "removed1.parquet")).to_pylist()
    assert removed[0]["id"] == "s1-0" and removed[0]["shared_ngrams"] > 10


def test_reference_lines_that_share_an_ngram_with_the_suite_are_left_out(data_dir, tmp_path):
    build_suite(_suite_config(data_dir), str(tmp_path / "suite"))
    lines = [line for line in (data_dir / SPEECH).read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    other = [line for line in (data_dir / "reference/speeches_nltk/inaugural/1861-Lincoln.txt").read_text(encoding="utf-8", errors="replace")
             .splitlines() if line.strip()]
    kept, dropped = without_heldout(lines + other, str(tmp_path / "suite" / "ngrams.npz"))
    assert dropped > 0 and kept[-len(other):] == other
    assert not NgramSet.load(str(tmp_path / "suite" / "ngrams.npz")).shared("\n".join(kept))


def test_exact_bits_per_byte_agrees_with_a_hand_computation():
    torch.manual_seed(0)
    seq_len, eos = 8, 2
    model = Transformer(ModelConfig(vocab_size=300, seq_len=seq_len, n_layers=2, d_model=32, n_heads=4,
                                    ffn_multiple=16)).eval()
    texts = {"a": "héllo wörld, a short text", "b": "another text that is longer than a single window of tokens"}
    encode = lambda text: list(text.encode("utf-8"))          # bytes as tokens: easy to count by hand
    documents = [{"domain": name, "text": text} for name, text in texts.items()]
    suite = SuiteTokens.from_documents(documents, encode, eos, seq_len)
    nll = suite_nll(model_window_nll(model), suite, seq_len, batch_size=3, rank=0, world_size=1,
                    device=torch.device("cpu"))
    expected = {}
    for name, text in texts.items():               # every token once, conditioned on its window's start
        sequence = [eos, *encode(text)]
        total = 0.0
        with torch.no_grad():
            for position in range(1, len(sequence)):
                start = (position - 1) // seq_len * seq_len
                context = torch.tensor([sequence[start:position]])
                total -= F.log_softmax(model(context)[0, -1].double(), dim=-1)[sequence[position]].item()
        expected[name] = total / math.log(2) / len(text.encode("utf-8"))
    measured = bits_per_byte_by_domain(nll, suite)
    assert measured["a"] == pytest.approx(expected["a"], rel=1e-5)
    assert measured["b"] == pytest.approx(expected["b"], rel=1e-5)
    assert measured["macro"] == pytest.approx((expected["a"] + expected["b"]) / 2, rel=1e-5)


def test_statistics_on_hand_made_runs():
    runs = [RunScore("raw", seed, {"web": web, "macro": macro}) for seed, web, macro in
            [(0, 2.00, 2.10), (1, 2.02, 2.12), (2, 1.98, 2.08)]]
    runs += [RunScore("full", seed, {"web": web, "macro": macro}) for seed, web, macro in
             [(0, 1.90, 2.00), (1, 1.93, 2.03), (2, 1.87, 1.97)]]
    table = compare(runs, ["raw", "full"], "raw")
    raw, full = table["variants"]["raw"], table["variants"]["full"]
    assert raw["metrics"]["macro"]["mean"] == pytest.approx(2.10)
    assert raw["metrics"]["macro"]["std"] == pytest.approx(0.02)
    assert full["metrics"]["macro"]["std"] == pytest.approx(0.03)
    versus = full["vs_baseline"]["macro"]
    assert versus["difference"] == pytest.approx(-0.10)
    assert versus["seed_std"] == pytest.approx(math.sqrt((0.02 ** 2 + 0.03 ** 2) / 2))
    assert versus["snr"] == pytest.approx(0.10 / math.sqrt((0.02 ** 2 + 0.03 ** 2) / 2))
    differences = np.array([-0.10, -0.09, -0.11])        # paired t-test by hand
    t = differences.mean() / (differences.std(ddof=1) / math.sqrt(3))
    from scipy import stats
    assert versus["p_value"] == pytest.approx(2 * stats.t.sf(abs(t), df=2))
    assert versus["paired_std"] == pytest.approx(0.01) and versus["called"]
    assert verdict(table, "full") == (f"full beats raw by 0.1000 bpb, 3.9x the seed std (3 seeds, paired p "
                                      f"{versus['p_value']:.3f}; detectable {versus['mde']:.4f})")
    noisy = compare([RunScore("raw", 0, {"macro": 2.0}), RunScore("raw", 1, {"macro": 2.2}),
                     RunScore("full", 0, {"macro": 2.1}), RunScore("full", 1, {"macro": 2.0})], ["raw", "full"], "raw")
    assert verdict(noisy, "full").startswith("full vs raw: no difference larger than ")


def test_no_winner_is_called_without_seed_noise_to_weigh_the_difference_against():
    one_seed = compare([RunScore("raw", 0, {"macro": 1.500}), RunScore("full", 0, {"macro": 1.499})],
                       ["raw", "full"], "raw")
    versus = one_seed["variants"]["full"]["vs_baseline"]["macro"]
    assert versus["difference"] == pytest.approx(-0.001) and versus["snr"] is None and versus["seed_std"] is None
    assert verdict(one_seed, "full").startswith("full vs raw: not called (-0.0010 bpb, 1 seeds in common")
    assert versus["mde"] is None and not versus["called"]
    disjoint = compare([RunScore("raw", 0, {"macro": 1.5}), RunScore("raw", 1, {"macro": 1.6}),
                        RunScore("full", 2, {"macro": 1.4}), RunScore("full", 3, {"macro": 1.3})],
                       ["raw", "full"], "raw")
    assert disjoint["variants"]["full"]["vs_baseline"]["macro"]["difference"] is None
    assert verdict(disjoint, "full").startswith("full vs raw: not called (0 seeds in common")
    alike = compare([RunScore(name, seed, {"macro": value}) for name, value in (("raw", 1.5), ("full", 1.4))
                     for seed in (0, 1)], ["raw", "full"], "raw")
    assert "not called" in verdict(alike, "full")       # seeds that change nothing measure no noise
    assert "| full |" in table_markdown(one_seed)


def _ablation_raw() -> dict:
    return yaml.safe_load(open("configs/ablation.yaml")) | {"origin": "configs"}


def test_seed_curves_share_one_token_axis_when_the_seeds_evaluated_at_different_tokens():
    """Under a batch ramp each seed's evaluations fall at its own token counts: the chart interpolates every curve
    onto the points inside the range all seeds cover, instead of keeping only the points they all share."""
    same = {0: [(512, 3.0), (1024, 2.0)], 1: [(1024, 2.2), (512, 3.2)]}
    points, values = seed_curves(same)
    assert points == [512, 1024] and values.tolist() == [[3.0, 2.0], [3.2, 2.2]]
    ramped = {0: [(256, 4.0), (768, 3.0), (1280, 2.0)], 1: [(512, 3.6), (1024, 2.6), (1536, 1.6)]}
    points, values = seed_curves(ramped)
    assert points == [512, 768, 1024, 1280]
    assert np.allclose(values, [[3.5, 3.0, 2.5, 2.0], [3.6, 3.1, 2.6, 2.1]])
    assert seed_curves({0: [(0, 1.0), (10, 0.5)], 1: [(20, 1.0), (30, 0.5)]})[0] == []
    assert seed_curves({})[0] == []


def test_the_shipped_ablation_file_is_valid_with_five_variants_in_dclm_order():
    ablation = load_ablation("configs/ablation.yaml")
    assert list(ablation.variants) == ["raw", "+dedup", "+heuristics", "+perplexity", "+classifier"]
    recipes = ablation.variant_recipes()
    assert not recipes["raw"].dedup.enabled and not recipes["raw"].quality.enabled
    assert recipes["+heuristics"].quality.enabled and not recipes["+heuristics"].quality.filter.kenlm.enabled
    assert recipes["+classifier"].quality.filter.classifier.enabled
    assert len(ablation.seeds) >= 3
    assert {recipe.mixture.token_budget for recipe in recipes.values()} == {ablation.tokens}


@pytest.mark.parametrize("override, named", [
    ({"train": {"micro_batch_size": 8}}, "'train'"),
    ({"tokenizer": {"vocab_size": 100}}, "'tokenizer'"),
    ({"mixture": {"token_budget": 5}}, "'mixture.token_budget'"),
    ({"mlflow": {"experiment": "x"}}, "'mlflow'"),
])
def test_a_variant_overriding_a_held_fixed_key_is_refused(override, named):
    raw = _ablation_raw()
    raw["variants"]["+dedup"] = override
    with pytest.raises(RecipeError, match=f"variant '\\+dedup' overrides {named}"):
        parse_ablation(raw)


def test_a_variant_selecting_a_stage_or_threshold_that_does_not_exist_is_an_error():
    raw = _ablation_raw()
    raw["variants"]["+dedup"] = {"quality": {"filter": {"gopher_quality": {"min_wordz": 3}}}}
    with pytest.raises(RecipeError, match=r"(?s)variants\.\+dedup.*quality\.filter\.gopher_quality\.min_wordz"):
        parse_ablation(raw)
    raw["variants"]["+dedup"] = {"substring_dedup": {"enabled": True}}
    with pytest.raises(RecipeError, match="substring_dedup"):
        parse_ablation(raw)


def test_a_budget_that_is_not_whole_updates_is_refused_with_the_numbers():
    from flows.ablation import budget_figures

    ablation = parse_ablation(_ablation_raw() | {"tokens": 1000})
    with pytest.raises(RecipeError, match="not a whole number of updates of 512 tokens.*use 512 or 1,024"):
        budget_figures(ablation)


def test_ablation_runs_read_their_stream_in_order_unless_the_file_says_otherwise():
    assert parse_ablation(_ablation_raw()).train.data.order == "stream"
    raw = _ablation_raw()
    raw["train"]["data"] = {"order": "shuffle"}
    assert parse_ablation(raw).train.data.order == "shuffle"


@pytest.mark.parametrize("controls, expected", [
    (["init", "data_order", "mixture_draw"], {"seed": 4, "order_seed": None}),
    (["data_order"], {"seed": 0, "order_seed": 4}),
    (["mixture_draw"], {"seed": 4, "order_seed": 0}),
    (["init"], {"seed": 0, "order_seed": None}),
])
def test_a_seed_sets_the_mixtures_draw_and_order_as_its_controls_say(controls, expected):
    """Under `data_order` alone the stream's order follows the seed and the draw stays; under `mixture_draw`
    alone the other way round."""
    from configs.mixture import MixtureConfig
    from flows.ablation_data import seeded_draw

    assert seeded_draw(MixtureConfig(), controls, 4) == expected

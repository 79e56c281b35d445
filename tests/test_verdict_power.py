"""What a verdict can see: the minimum detectable effect and the seeds that would resolve a difference, by hand on
hand-made run metrics; the three kinds of verdict; the sequential seed rounds' false-call rate on simulated null
comparisons."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from configs.ablation import parse_ablation
from tasks.evaluation.compare import Power, RunScore, compare, detectable_effect, seeds_to_resolve, verdict


def _runs(baseline: list[float], variant: list[float]) -> list[RunScore]:
    return ([RunScore("raw", seed, {"macro": value}) for seed, value in enumerate(baseline)]
            + [RunScore("full", seed, {"macro": value}) for seed, value in enumerate(variant)])


def _power_by_hand(effect: float, std: float, pairs: int, alpha: float = 0.05) -> float:
    """A two-sided paired t-test's power: the noncentral t's mass beyond the critical values (scipy gives NaN for a
    far tail under 1e-16)."""
    critical = stats.t.ppf(1 - alpha / 2, pairs - 1)
    noncentrality = effect * math.sqrt(pairs) / std
    return stats.nct.sf(critical, pairs - 1, noncentrality) + np.nan_to_num(stats.nct.cdf(-critical, pairs - 1,
                                                                                        noncentrality))


def test_the_detectable_effect_is_called_with_the_stated_power_by_hand_and_by_simulation():
    for pairs in (2, 3, 5, 10):
        mde = detectable_effect(0.02, pairs)
        assert _power_by_hand(mde, 0.02, pairs) == pytest.approx(0.8, abs=1e-6)
    rng = np.random.default_rng(0)
    mde = detectable_effect(1.0, 5)
    differences = rng.normal(mde, 1.0, (20_000, 5))
    p = stats.ttest_1samp(differences, 0.0, axis=1).pvalue
    assert (p < 0.05).mean() == pytest.approx(0.8, abs=0.015)
    assert detectable_effect(1.0, 5, Power(alpha=0.01)) > mde > detectable_effect(1.0, 10)


def test_a_small_difference_with_little_noise_is_bounded():
    # differences -0.002, +0.004, -0.005: mean -0.001, paired std 0.004583
    table = compare(_runs([2.10, 2.12, 2.08], [2.098, 2.124, 2.075]), ["raw", "full"], "raw")
    cell = table["variants"]["full"]["vs_baseline"]["macro"]
    std = np.std([-0.002, 0.004, -0.005], ddof=1)
    assert cell["paired_std"] == pytest.approx(std) and not cell["called"]
    assert _power_by_hand(cell["mde"], std, 3) == pytest.approx(0.8, abs=1e-6)
    assert cell["seeds_to_resolve"] > 10                 # beyond the seed cap: the effect is bounded
    assert verdict(table, "full").startswith(f"full vs raw: no difference larger than {cell['mde']:.4f} bpb "
                                             f"(-0.0010 observed, 3 seeds, paired p {cell['p_value']:.3f}")


def test_an_uncalled_difference_that_a_few_more_seeds_would_resolve_is_underpowered():
    # differences -0.03, -0.01, -0.05: mean -0.03, paired std 0.02, t = 2.6 on 2 df: p 0.12
    table = compare(_runs([2.10, 2.12, 2.08], [2.07, 2.11, 2.03]), ["raw", "full"], "raw")
    cell = table["variants"]["full"]["vs_baseline"]["macro"]
    assert cell["p_value"] == pytest.approx(2 * stats.t.sf(0.03 / (0.02 / math.sqrt(3)), 2)) and not cell["called"]
    # by hand: the fewest seeds whose power at a 0.03 difference reaches 0.8
    needed = next(n for n in range(2, 100) if _power_by_hand(0.03, 0.02, n) >= 0.8)
    assert needed == 6 and cell["seeds_to_resolve"] == needed
    assert verdict(table, "full") == (f"full vs raw: underpowered (-0.0300 bpb, 3 seeds, paired p "
                                      f"{cell['p_value']:.3f}; 3 seeds detect {cell['mde']:.4f}): about 6 seeds "
                                      f"would resolve a difference of this size")
    assert "no difference larger than" in verdict(compare(_runs([2.10, 2.12, 2.08], [2.07, 2.11, 2.03]),
                                                          ["raw", "full"], "raw", Power(seed_cap=5)), "full")


def test_each_step_is_compared_with_the_variant_before_it():
    runs = _runs([2.10, 2.12, 2.08], [2.00, 2.03, 1.97])
    runs += [RunScore("mid", seed, {"macro": value}) for seed, value in enumerate([2.05, 2.06, 2.03])]
    table = compare(runs, ["raw", "mid", "full"], "raw")
    step = table["variants"]["full"]["vs_previous"]["macro"]
    assert step["difference"] == pytest.approx(np.mean([-0.05, -0.03, -0.06]))
    assert "vs_previous" not in table["variants"]["raw"]
    assert verdict(table, "full", against="vs_previous").startswith("full beats mid by 0.0467 bpb")
    assert seeds_to_resolve(0.0, 0.01) is None


def _rounds_ablation(step: int = 2, maximum: int = 10):
    raw = __import__("yaml").safe_load(open("configs/ablation.yaml")) | {"origin": "configs",
                                                                         "seed_rounds": {"max": maximum, "step": step}}
    return parse_ablation(raw)


def test_seed_rounds_keep_the_false_call_rate_at_alpha_on_simulated_null_comparisons():
    """Identical recipes: every look of the rounds tests the headline at its spent alpha; a difference is called
    in at most alpha of the ablations. Testing every look at the full alpha (what the spending prevents) calls
    far more often: the check can fail. 400 trials (spent 0.038 against a bound of 0.072, every look at alpha
    0.133): a rate one and a half times alpha fails, as the unspent one does, in a third of the time of 1,000."""
    from flows.ablation import look_power

    ablation = _rounds_ablation()
    looks = ablation.seed_looks()
    assert [len(seeds) for seeds in looks] == [3, 5, 7, 9, 10]
    rng = np.random.default_rng(1)
    trials, called, called_naively = 400, 0, 0
    for _ in range(trials):
        scores = rng.normal(2.0, 0.03, (2, 10))           # the same recipe twice: no true difference
        any_call = any_naive = False
        for seeds in looks:
            runs = [RunScore(name, seed, {"macro": float(scores[index, seed])})
                    for index, name in enumerate(["raw", "full"]) for seed in seeds]
            spent = compare(runs, ["raw", "full"], "raw", look_power(ablation))
            full = compare(runs, ["raw", "full"], "raw", Power())
            any_call |= spent["variants"]["full"]["vs_baseline"]["macro"]["called"]
            any_naive |= full["variants"]["full"]["vs_baseline"]["macro"]["called"]
            if any_call:
                break
        called += any_call
        called_naively += any_naive
    print(f"false calls: spent {called / trials:.3f}, alpha at every look {called_naively / trials:.3f}")
    assert called / trials <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials)
    assert called_naively / trials > 0.08


def test_the_steps_table_and_chart_mark_what_is_called(tmp_path):
    from tasks.evaluation.charts import steps_png
    from tasks.evaluation.compare import steps_markdown, table_markdown

    runs = _runs([2.10, 2.12, 2.08], [2.00, 2.03, 1.97])
    runs += [RunScore("mid", seed, {"macro": value}) for seed, value in enumerate([2.099, 2.124, 2.077])]
    table = compare(runs, ["raw", "mid", "full"], "raw")
    lines = steps_markdown(table).splitlines()
    assert lines[2] == "| raw → mid | +0.0000 (0.0118) |"                                 # nothing detectable
    assert lines[3].startswith("| mid → full | -0.1000 * (")                             # called
    assert "| full |" in table_markdown(table) and table_markdown(table).count(" *") == 1
    table["older_code"] = {"mid": {1: "unknown"}}
    assert "| mid (1 of 3 runs by other trainer code) |" in table_markdown(table)
    assert (tmp_path / "steps.png").exists() is False and steps_png(table, str(tmp_path / "steps.png"))
    assert (tmp_path / "steps.png").stat().st_size > 10_000


def test_sluice_ablate_flags_set_rounds_split_and_reuse_over_the_file(capsys):
    from types import SimpleNamespace

    from cli.main import main
    from cli.training_commands import ablation_with_flags
    from configs.ablation import load_ablation

    shipped = load_ablation("configs/ablation.yaml")
    flags = SimpleNamespace(ablation="configs/ablation.yaml", reuse_older_runs=True, variance_split=True,
                            seed_rounds=6)
    flagged = ablation_with_flags(shipped, flags)
    assert flagged.reuse_older_runs and flagged.variance_split and flagged.seed_rounds.max == 6
    assert [len(seeds) for seeds in flagged.seed_looks()] == [3, 5, 6]
    assert flagged.base_recipe() == shipped.base_recipe() and flagged.tokens == shipped.tokens
    assert main(["ablate", "configs/ablation.yaml", "--seed-rounds", "2"]) == 2         # below the 3 seeds given
    assert "seed_rounds.max (2) is below the 3 seeds" in capsys.readouterr().err

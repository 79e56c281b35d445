"""The batch-size ramp's schedules, its learning-rate factor and its config checks (the trainer runs it in
tests/test_train.py)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from configs.training import BatchRampSpec, TrainingConfig
from training.batch_ramp import BatchRamp, lr_factor, stepwise_levels

MICRO, SEQ = 4, 8                       # sequences per micro-batch over all ranks, tokens per sequence
MICRO_TOKENS = MICRO * SEQ


def _updates(ramp: BatchRamp, total_tokens: int, b_noise=lambda step: None) -> list[int]:
    """The accumulation of every update of a run of `total_tokens`, as the trainer takes them."""
    tokens, taken = 0, []
    while tokens < total_tokens:
        accumulation = ramp.accumulation(tokens, total_tokens)
        ramp.observe(b_noise(len(taken)))
        taken.append(accumulation)
        tokens += accumulation * MICRO_TOKENS
    assert tokens == total_tokens            # the ramp never overshoots the budget
    return taken


def test_linear_ramp_adds_one_micro_batch_at_a_time_and_ends_at_the_budget():
    ramp = BatchRamp(BatchRampSpec(schedule="linear", start_accumulation=1, tokens=16 * MICRO_TOKENS), 4, MICRO, SEQ)
    taken = _updates(ramp, 40 * MICRO_TOKENS)
    assert taken == [1] * 6 + [2] * 3 + [3] * 2 + [4] * 5 + [2]       # the last update takes what is left
    assert ramp.planned_updates(40 * MICRO_TOKENS) == len(taken)      # what `sluice plan` says
    assert ramp.accumulation(16 * MICRO_TOKENS, 10 ** 9) == 4       # full once the ramp's tokens are seen
    assert ramp.accumulation(39 * MICRO_TOKENS, 40 * MICRO_TOKENS) == 1   # clamped to what the budget has left


def test_stepwise_ramp_doubles_at_equal_intervals():
    assert stepwise_levels(1, 8) == [1, 2, 4, 8] and stepwise_levels(3, 8) == [3, 6, 8] and stepwise_levels(2, 4) == [2, 4]
    ramp = BatchRamp(BatchRampSpec(schedule="stepwise", start_accumulation=1, tokens=30 * MICRO_TOKENS), 8, MICRO, SEQ)
    assert [ramp.accumulation(t * MICRO_TOKENS, 10 ** 9) for t in (0, 9, 10, 19, 20, 29, 30)] == [1, 1, 2, 2, 4, 4, 8]


def test_noise_scale_ramp_grows_while_the_noise_scale_is_above_the_batch_and_resumes_its_decision():
    spec = BatchRampSpec(schedule="noise_scale", start_accumulation=2, check_every=3)
    ramp = BatchRamp(spec, 16, MICRO, SEQ)
    # B_noise 100 sequences: the batch (8 sequences at first) at most doubles per decision, up to 25 micro-batches'
    # worth capped by the full 16.
    taken = _updates(ramp, 60 * 16 * MICRO_TOKENS, b_noise=lambda step: 100.0)
    assert taken[:13] == [2, 2, 2, 4, 4, 4, 8, 8, 8, 16, 16, 16, 16]
    held = BatchRamp(spec, 16, MICRO, SEQ)
    assert _updates(held, 40 * MICRO_TOKENS, b_noise=lambda step: 5.0) == [2] * 20     # 5 < 8 sequences: stays
    resumed = BatchRamp(spec, 16, MICRO, SEQ)
    resumed.load_state_dict(ramp.state_dict())
    assert resumed.accumulation(0, 10 ** 9) == 16
    assert resumed.planned_updates(10 ** 9) is None                      # decided during the run


def test_lr_factor_scales_by_the_configured_power_of_the_batch_fraction():
    assert lr_factor(2, 8, "none") == 1.0
    assert lr_factor(2, 8, "sqrt") == pytest.approx(0.5) and lr_factor(2, 8, "linear") == pytest.approx(0.25)
    assert lr_factor(8, 8, "linear") == 1.0


@pytest.mark.parametrize("ramp, accumulation, message", [
    ({"schedule": "linear", "start_accumulation": 4, "tokens": 100}, 4, "must be below grad_accumulation"),
    ({"schedule": "stepwise", "start_accumulation": 1}, 4, "needs `tokens`"),
    ({"schedule": "noise_scale", "start_accumulation": 1}, 4, "start_accumulation >= 2"),
])
def test_an_inconsistent_ramp_is_refused(ramp, accumulation, message):
    with pytest.raises(ValidationError, match=message):
        TrainingConfig(grad_accumulation=accumulation, batch_ramp=ramp)

"""`sluice doctor`'s checks: a clean history gives no finding, and each fault (dev.doctor_drills), injected
alone into the clean history, gives exactly its own finding. (Real runs: tests/test_train.py checks a clean run, exact resumes and a
run with spikes and a rollback.)"""
from __future__ import annotations

import math
import random

import pytest

from configs.training import OptimizerSpec
from training.doctor import RunHistory, diagnose, report_text
from dev.doctor_drills import FAULTS, inject
from training.lr_schedule import learning_rate

STEPS, VOCAB, EVERY = 200, 4000, 20
OPTIMIZER = OptimizerSpec(lr=3e-3, warmup_steps=10, min_lr_ratio=0.1)
PARAMS = {"model.vocab_size": str(VOCAB), "optimizer.lr": "0.003", "optimizer.warmup_steps": "10",
          "optimizer.min_lr_ratio": "0.1", "plan.steps": str(STEPS), "micro_batch_size": "4",
          "hardware.data_parallel": "2", "grad_accumulation": "2", "hardware.device": "cpu", "hardware.dtype": "fp32"}


def _clean() -> RunHistory:
    """A healthy run's metrics: loss from ln(vocab) down a power law with noise, validation a little above it, the
    configured schedule, steady throughput, a flat gradient norm and a noise scale near the batch."""
    rng = random.Random(0)
    loss = [(s, 4.0 + (math.log(VOCAB) - 4.0) * s ** -0.4 + rng.gauss(0, 0.03)) for s in range(1, STEPS + 1)]
    metrics = {
        "loss": loss,
        "val_loss": [(s, 4.05 + (math.log(VOCAB) - 4.0) * s ** -0.4) for s in range(EVERY, STEPS + 1, EVERY)],
        "lr": [(s, learning_rate(s - 1, STEPS, OPTIMIZER)) for s in range(1, STEPS + 1)],
        "tokens_per_s": [(s, 6000 + rng.gauss(0, 400)) for s in range(1, STEPS + 1)],
        "grad_norm": [(s, 0.6 + rng.gauss(0, 0.05)) for s in range(1, STEPS + 1)],
        "b_noise": [(s, 12 + rng.gauss(0, 2)) for s in range(2, STEPS + 1)],
    }
    return RunHistory(dict(PARAMS), metrics, {"english": 0.8})


def test_a_clean_run_has_no_finding():
    findings = diagnose(_clean())
    assert findings == [], report_text(findings, "clean")
    assert "No findings" in report_text([], "clean")


@pytest.mark.parametrize("fault", FAULTS)
def test_each_injected_fault_is_found_alone_with_its_evidence_and_a_fix(fault):
    findings = diagnose(inject(_clean(), fault))
    assert [finding.check for finding in findings] == [fault], report_text(findings, fault)
    assert findings[0].seen and findings[0].fix
    assert f"## {fault}" in report_text(findings, fault)


def test_a_resume_that_continues_exactly_is_not_a_discontinuity():
    run = _clean()
    run.metrics["resumed_at"] = [(100, 100.0)]
    run.metrics["loss"] = run.metrics["loss"][:110] + run.metrics["loss"][100:]       # steps 101-110 logged again
    assert diagnose(run) == []


def test_overfitting_names_the_mixtures_repeated_sources():
    run = inject(_clean(), "validation_rising")
    run.epochs = {"english": 6.0, "german": 0.5}
    (finding,) = diagnose(run)
    assert "english 6.0x" in finding.seen and "german" not in finding.seen

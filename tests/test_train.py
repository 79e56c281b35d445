"""The trainer for real: torchrun with two CPU processes (gloo), FSDP2, torch.distributed.checkpoint, on token
shards of real reference text (bytes as tokens, so no tokenizer is needed)."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from torchrun_training import TrainedRuns, training_runs    # tests/torchrun_training.py
from torchrun_training import run as run_spec                # (`run`: a name the tests use for MLflow runs)


ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _config(tmp_path: Path, shards: list[str], name: str) -> str:
    config = {"name": name, "model": {"preset": "tiny"}, "micro_batch_size": 4, "grad_accumulation": 2,
              "steps": 12, "data": {"train": shards[:3], "validation": shards[3:], "seed": 0, "bytes_per_token": 1.0},
              "eval": {"every": 6, "batches": 2}, "mlflow": {"experiment": "train-test", "tags": {"sluice.data": name},
                                                           "system_metrics_interval_s": 1},
              "optimizer": {"lr": 3e-3, "warmup_steps": 2}, "checkpoint": {"dir": str(tmp_path / name), "every": 4},
              "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 2}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _run_torchrun(config: str) -> subprocess.CompletedProcess:
    """A torchrun of its own, as the training flow starts one (its MLflow run written from this process): for the
    runs that fail, which end their torchrun."""
    from flows.torchrun import torchrun_command
    from tracking.mlflow_writer import WRITER_ENV, HostedWriter

    with HostedWriter() as writer:
        env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), WRITER_ENV: writer.address}
        return subprocess.run(torchrun_command(config, 2), cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)


def _edit(config: str, **changes) -> str:
    raw = yaml.safe_load(Path(config).read_text())
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        target = raw
        for parent in parents:
            target = target[parent]
        target[key] = value
    Path(config).write_text(yaml.safe_dump(raw))
    return config


@pytest.fixture(scope="module")
def trained(byte_shards, tmp_path_factory) -> tuple[Path, TrainedRuns]:
    """The successful runs of this module's tests, one after another in one torchrun of 2 ranks (tests/
    torchrun_training.py: each with its own process group, Trainer and MLflow run, as a torchrun of its own; an
    interrupted run resumed from its checkpoint on disk): the ranks import torch and the trainer once, not eleven
    times. Each run's MLflow run is written by a writer in this process, as the training flow's, except `straight`'s,
    written by rank 0 itself as in a torchrun started by hand. The drilled runs' faults are their own (tests/
    training_drills.py). The throttled run first, as in a torchrun of its own: the doctor reads its first steps'
    speed."""
    folder = tmp_path_factory.mktemp("trained")
    # the store exists before the ranks start: creating it beside them halves their first steps' tokens/s, which
    # the doctor rightly reads as a throughput drop (seen with the throttled run alone)
    import mlflow

    mlflow.MlflowClient().search_experiments()
    interrupted, ramp_interrupted = _config(folder, byte_shards, "interrupted"), _ramped(folder, byte_shards,
                                                                                        "ramp-interrupted")
    misresumed = _edit(_config(folder, byte_shards, "misresumed"), steps=16, checkpoint__every=2)
    spiky = _edit(_config(folder, byte_shards, "spiky"), steps=16, spikes={
        "window": 4, "min_history": 4, "sigmas": 3.0, "max_consecutive": 3})
    runs = {
        "shifted-throttled": run_spec(_edit(_config(folder, byte_shards, "shifted-throttled"), steps=40,
                                            optimizer__lr=1e-2), hosted=True, drills={
            "label_shift": True, "slow_rank": 1, "slow_seconds": 0.5, "slow_steps": list(range(10, 17))}),
        "straight": run_spec(_config(folder, byte_shards, "straight")),
        "interrupted-1": run_spec(interrupted, stop_after=5, hosted=True),     # checkpoint at 4, step 5 is lost
        "interrupted-2": run_spec(interrupted, stop_after=10, hosted=True),    # resumes at 4, checkpoint at 8
        "interrupted-3": run_spec(interrupted, hosted=True),                   # resumes at 8, runs to 12
        "ramp-straight": run_spec(_ramped(folder, byte_shards, "ramp-straight"), hosted=True),
        "ramp-interrupted-1": run_spec(ramp_interrupted, stop_after=5, hosted=True),   # checkpoint at 4
        "ramp-interrupted-2": run_spec(ramp_interrupted, hosted=True),
        "spiky": run_spec(spiky, hosted=True, drills={"bad_batches": [9, 13, 14, 15]}),
        "misresumed-1": run_spec(misresumed, stop_after=10, hosted=True),
        "misresumed-2": run_spec(misresumed, hosted=True, drills={"resume_weights_from": 2}),
    }
    return folder, training_runs(runs, 2)


def _ramped(folder: Path, shards: list[str], name: str) -> str:
    """A linear ramp from 1 to 4 micro-batches over the first half of the tokens, the learning rate scaled by the
    square root of the batch fraction."""
    micro_tokens = 2 * 2 * 64                       # micro_batch_size x ranks x the tiny model's seq_len
    return _edit(_config(folder, shards, name), micro_batch_size=2, grad_accumulation=4, steps=6, checkpoint__every=2,
                 batch_ramp={"schedule": "linear", "start_accumulation": 1, "tokens": 12 * micro_tokens,
                             "lr_scaling": "sqrt"})


def _runs_of(*names: str) -> dict:
    """name -> MLflow run of this module's trainings (their `sluice.data` tag)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = client.get_experiment_by_name("train-test").experiment_id
    return {name: client.search_runs([experiment], filter_string=f"tags.`sluice.data` = '{name}'")[0]
            for name in names}


def test_two_process_fsdp_training_lowers_the_loss_and_resumes_exactly_twice(trained):
    _, runs = trained
    straight = [record for record in runs["straight"] if "loss" in record]
    assert [record["step"] for record in straight] == list(range(1, 13))
    assert all(record["b_noise"] is not None for record in straight[1:])      # accumulation 2 gives two batch sizes
    assert straight[-1]["loss"] < straight[0]["loss"] - 0.5

    first, second, third = runs["interrupted-1"], runs["interrupted-2"], runs["interrupted-3"]
    assert [r["step"] for r in second if r.get("event") == "resumed"] == [4]
    assert [r["step"] for r in third if r.get("event") == "resumed"] == [8]
    resumed = {r["step"]: r["loss"] for run in (first, second, third) for r in run if "loss" in r}
    for record in straight:
        assert resumed[record["step"]] == pytest.approx(record["loss"], abs=1e-6), record["step"]

    # MLflow: one run per training run, continued across the resumes, params once, batched metrics, lineage tag.
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    (experiment,) = {run.info.experiment_id for run in _runs_of("straight", "interrupted").values()}
    runs = {name: [run for run in client.search_runs([experiment]) if run.data.tags["sluice.data"] == name]
            for name in ("straight", "interrupted")}
    assert all(len(found) == 1 for found in runs.values()), runs           # the resumes continued one run
    runs = {name: found for name, (found,) in runs.items()}
    for name, run in runs.items():
        assert run.info.status == "FINISHED" and run.data.params["model.preset"] == "tiny"
        history = client.get_metric_history(run.info.run_id, "loss")
        assert {metric.step for metric in history} == set(range(1, 13))
        validation = client.get_metric_history(run.info.run_id, "val_bpb")
        assert [metric.step for metric in validation] == [6, 12]
        assert validation[-1].value == pytest.approx(client.get_metric_history(
            run.info.run_id, "val_loss")[-1].value / math.log(2))
        assert "model_config.json" in {a.path for a in client.list_artifacts(run.info.run_id)}
        assert any(key.startswith("system/cpu_utilization") for key in run.data.metrics), sorted(run.data.metrics)
    # `sluice doctor`: a clean run, and one resumed twice exactly, have nothing to report.
    from flows.doctor import doctor

    assert {name: doctor(run.info.run_id, publish=False)["findings"] for name, run in runs.items()} == \
        {"straight": [], "interrupted": []}


def test_a_batch_ramp_trains_the_planned_tokens_and_resumes_exactly_mid_ramp(trained):
    """A linear ramp from 1 to 4 micro-batches over the first half of the tokens (`_ramped`): killed mid-ramp and
    resumed, it logs the losses of an uninterrupted run."""
    from flows.doctor import doctor

    _, runs = trained
    straight = [r for r in runs["ramp-straight"] if "loss" in r]
    assert [r["batch_sequences"] // 4 for r in straight] == [1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 2]
    assert straight[-1]["tokens"] == 6 * 4 * 4 * 64                 # 6 full updates' tokens, in 11 updates
    assert straight[0]["lr"] == pytest.approx(3e-3 / 2 * 0.5)       # warmup step 0 of 2, sqrt(1 / 4)
    first, second = runs["ramp-interrupted-1"], runs["ramp-interrupted-2"]     # checkpoint at 4 (accumulation 2)
    assert [r["step"] for r in second if r.get("event") == "resumed"] == [4]
    resumed = {r["step"]: r for run in (first, second) for r in run if "loss" in r}
    for record in straight:
        again = resumed[record["step"]]
        assert (again["loss"], again["tokens"]) == (pytest.approx(record["loss"], abs=1e-6), record["tokens"])
    run = _runs_of("ramp-interrupted")["ramp-interrupted"]
    assert doctor(run.info.run_id, publish=False)["findings"] == []  # the ramp's rates are on its schedule


def test_a_training_past_its_timeout_fails_saying_so_and_leaves_its_mlflow_run_failed(byte_shards, tmp_path):
    """The launcher's timeout stops every rank; the error names the timeout rather than an exit code, and the MLflow
    run the attempt started is FAILED, not RUNNING for ever."""
    import mlflow

    from configs.training import TrainingConfig
    from flows.training_flow import training_flow
    from tracking.mlflow_writer import RUN_RECORD

    raw = yaml.safe_load(Path(_edit(_config(tmp_path, byte_shards, "slow"), steps=100_000)).read_text())
    config = TrainingConfig.model_validate(raw | {"timeout_s": 12})
    with pytest.raises(RuntimeError, match=r"torchrun was stopped after timeout_s = 12 s; a retry resumes"):
        training_flow.with_options(retries=0)(config)
    with open(f"{config.checkpoint.dir}/{RUN_RECORD}") as handle:
        run_id = json.load(handle)["run_id"]
    assert mlflow.MlflowClient().get_run(run_id).info.status == "FAILED"


def test_a_spike_is_skipped_and_repeated_spikes_roll_back_past_the_bad_batches(trained):
    records = trained[1]["spiky"]
    skipped = [r["attempt"] for r in records if r.get("event") == "spike_skipped"]
    rollbacks = [(r["attempt"], r["step"]) for r in records if r.get("event") == "rollback"]
    assert skipped == [9, 13, 14, 15]                    # every injected batch caught, nothing else
    assert rollbacks == [(15, 8)]                        # back to the checkpoint at step 8 after three in a row
    steps = [r["step"] for r in records if "loss" in r and "event" not in r]
    assert steps == list(range(1, 12)) + list(range(9, 17))   # steps 9..11 redone on the batches after the bad ones
    assert all(r["loss"] < 6.0 for r in records if "loss" in r and "event" not in r and r["step"] > 4)
    # `sluice doctor` reports the spikes and the rollback, and nothing else, in MLflow.
    import mlflow

    from flows.doctor import doctor

    run = _runs_of("spiky")["spiky"]
    (finding,) = doctor(run.info.run_id)["findings"]
    assert finding["check"] == "loss_spikes" and "(to steps 8)" in finding["seen"]
    assert "## loss_spikes" in Path(mlflow.MlflowClient().download_artifacts(run.info.run_id, "doctor.md")).read_text()


def test_noise_scale_estimators_recover_a_known_gradient_and_noise():
    from training.noise_scale import NoiseScale, unbiased_estimates

    true_sq, trace = 4.0, 8.0                 # E|G_B|^2 = |G|^2 + tr(Sigma) / B
    small, big = true_sq + trace / 2, true_sq + trace / 8
    assert unbiased_estimates(small, big, 2, 8) == pytest.approx((4.0, 8.0))
    scale = NoiseScale(2)
    assert scale.update(small, big, 8) == pytest.approx(2.0)
    assert scale.update(small, true_sq + trace / 4, 4) == pytest.approx(2.0)      # a ramp changes the big batch


def test_nan_loss_stops_naming_the_step_and_the_last_good_checkpoint(byte_shards, tmp_path):
    config = _edit(_config(tmp_path, byte_shards, "diverging"), optimizer__lr=1e4, optimizer__warmup_steps=0,
                   optimizer__grad_clip=None, checkpoint__every=1, steps=40)
    done = _run_torchrun(config)
    assert done.returncode != 0
    message = next(line for line in done.stderr.splitlines() if "NonFiniteLoss:" in line)
    step = int(message.split(" at step ")[1].split()[0])
    assert f"last good checkpoint is {tmp_path / 'diverging'}/step-{step - 1:06d}" in message


def test_a_corrupt_or_mismatched_checkpoint_is_an_error_not_a_fresh_start(trained, byte_shards, tmp_path):
    import shutil

    # a checkpoint the trainer saved at step 4 of this config (the first test's interrupted run), copied
    shutil.copytree(trained[0] / "interrupted" / "step-000004", tmp_path / "saved" / "step-000004")
    config = _edit(_config(tmp_path, byte_shards, "saved"), steps=8, model__d_model=128)
    done = _run_torchrun(config)
    assert done.returncode != 0 and "CheckpointError" in done.stderr
    assert "is of another model (differs in d_model" in done.stderr

    _edit(config, model__d_model=None)
    shard = next((tmp_path / "saved" / "step-000004").glob("*.distcp"))
    shard.write_bytes(shard.read_bytes()[:100])                     # truncated, as by a full disk
    done = _run_torchrun(config)
    assert done.returncode != 0 and "checkpoint" in done.stderr and "cannot be read" in done.stderr
    assert not any('"step": 5' in line for line in done.stdout.splitlines())     # no silent restart


def test_data_shorter_than_one_update_and_ids_outside_the_vocabulary_are_refused(byte_shards, tmp_path):
    config = _edit(_config(tmp_path, byte_shards, "short"), micro_batch_size=2000)
    done = _run_torchrun(config)
    assert done.returncode != 0 and "fewer than one update needs (2000 x 2 accumulation)" in done.stderr

    from storage.token_shard import TokenShardWriter
    from training.sequences import TokenSequences

    writer = TokenShardWriter(tmp_path / "wide", vocab_size=1024)
    writer.add_document(list(range(1000)))
    writer.close()
    with pytest.raises(ValueError, match="holds token id 999, outside the model's vocabulary of 512"):
        TokenSequences([tmp_path / "wide"], 64, 0).check_vocabulary(512)
    TokenSequences([tmp_path / "wide"], 64, 0).check_vocabulary(1024)


def test_a_sequence_longer_than_the_model_is_an_error():
    import torch

    from training.model import Transformer
    from training.shapes import PRESETS

    model = Transformer(PRESETS["tiny"])
    assert model(torch.zeros(1, 64, dtype=torch.long)).shape == (1, 64, 512)
    with pytest.raises(ValueError, match="sequence of 65 tokens exceeds seq_len 64"):
        model(torch.zeros(1, 65, dtype=torch.long))


def test_the_doctor_flags_a_label_shift_and_a_throttled_rank_in_real_runs(trained):
    """Drills run for real under torchrun, both in one run: targets = inputs (the off-by-one label bug), and rank 1
    stalled before 7 updates in a row. `sluice doctor` names each, and nothing else but what the label bug also
    causes: the validation loss (on true next tokens) rising while the copied targets' loss falls. (The stall
    changes no loss, the label bug no step's time: each drill's findings are its own.)"""
    from flows.doctor import doctor

    assert trained[1]["shifted-throttled"]                             # it ran to its end
    run = _runs_of("shifted-throttled")["shifted-throttled"]
    found = [(finding["check"], finding["severe"]) for finding in doctor(run.info.run_id)["findings"]]
    assert found == [("loss_too_low", True), ("validation_rising", False), ("throughput_drop", False)]


FP16_SCALE_TOO_LARGE = {"steps": 10, "grad_accumulation": 1, "data__validation": [], "hardware__dtype": "fp16",
                        "hardware__loss_scale": 2.0 ** 20}


@pytest.fixture(scope="module")
def option_runs(byte_shards, tmp_path_factory) -> TrainedRuns:
    """The runs of the trainer options', the fp16 loss scale's and the accumulation's tests (the one-layer model,
    MLflow off: these tests read the records only), one after another in one torchrun of 2 ranks (tests/
    torchrun_training.py, `training_runs`: each with its own process group and a Trainer built from its config, as
    a torchrun of its own; the resumed run from the checkpoint on disk): the ranks import torch and the trainer
    once, not ten times. The compiled run last: no run after it meets what compiling left in the ranks."""
    folder = tmp_path_factory.mktemp("options")

    def config(name: str, **changes) -> str:
        return _edit(_config(folder, byte_shards, name), **{"model__n_layers": 1, "mlflow__enabled": False,
                                                            **changes})

    interrupted = config("interrupted-fp16", **FP16_SCALE_TOO_LARGE)
    return training_runs({
        "plain": run_spec(config("plain", steps=4)),
        "recomputed": run_spec(config("recomputed", steps=4, hardware__activation_checkpointing=True)),
        "bf16": run_spec(config("bf16", steps=4, hardware__dtype="bf16")),
        "fp16": run_spec(config("fp16", steps=4, hardware__dtype="fp16")),
        "whole": run_spec(config("whole", steps=5, micro_batch_size=8, grad_accumulation=1, data__validation=[])),
        "accumulated": run_spec(config("accumulated", steps=5, micro_batch_size=2, grad_accumulation=4,
                                       data__validation=[])),
        "straight-fp16": run_spec(config("straight-fp16", **FP16_SCALE_TOO_LARGE)),
        "interrupted-fp16": run_spec(interrupted, stop_after=5),             # checkpoint at 4
        "resumed-fp16": run_spec(interrupted),
        "compiled-whole": run_spec(config("compiled-whole", steps=4, hardware__compile=True,
                                          hardware__compile_scope="model")),
    }, 2)


def _updates(records: list[dict]) -> list[dict]:
    return [record for record in records if "loss" in record and "event" not in record]


def test_activation_checkpointing_bf16_and_compile_run_on_cpu_with_the_losses_of_plain_fp32(option_runs):
    """Every trainer option runs somewhere: recomputing activations changes no loss; bf16 and fp16 mixed precision
    (FSDP2's MixedPrecisionPolicy on CPU ranks; fp16 with its loss scale) stay within their precision of fp32;
    torch.compile (inductor's CPU backend) within float tolerance. The compiled run compiles the whole model
    (compile_scope model), which no other test holds to the losses of an eager run; compiling block by block is
    held to them by tests/test_pipeline_parallel.py (GPipe stages compiled) and tests/test_checkpoint_layouts.py
    (tensor-parallel blocks compiled)."""
    def losses(name: str) -> list[float]:
        return [record["loss"] for record in _updates(option_runs[name])]

    plain = losses("plain")
    assert len(plain) == 4
    assert losses("recomputed") == pytest.approx(plain, abs=1e-5)
    bf16 = losses("bf16")
    assert bf16 == pytest.approx(plain, rel=2e-2) and bf16 != plain        # close, and really computed in bf16
    fp16 = losses("fp16")
    assert fp16 == pytest.approx(plain, rel=2e-2) and fp16 != plain and fp16 != bf16
    assert losses("compiled-whole") == pytest.approx(plain, abs=1e-3)


def test_fp16_skips_the_steps_whose_gradients_overflow_and_resumes_with_its_loss_scale(option_runs):
    """A loss scale too large to start from (2^20: the gradients reach float16's 65,504) overflows: those steps are
    skipped (no update: the loss does not move), counted and logged while the scale halves, then the run trains. A
    run killed after its checkpoint and resumed carries the scale and the count on: the same losses and scales."""
    straight = _updates(option_runs["straight-fp16"])
    skipped = [record for record in straight if record["grad_norm"] is None]
    assert 1 <= len(skipped) <= 6 and skipped == straight[:len(skipped)]
    assert [record["skipped_steps"] for record in straight] == [min(step, len(skipped)) for step in range(1, 11)]
    assert [record["loss_scale"] for record in skipped] == [2.0 ** (20 - step) for step in range(1, len(skipped) + 1)]
    assert max(record["loss"] for record in skipped) - min(record["loss"] for record in skipped) < 0.02   # no update
    assert straight[-1]["loss"] < straight[len(skipped)]["loss"] - 0.5                                      # trains

    first = _updates(option_runs["interrupted-fp16"])                 # stopped after step 5, checkpoint at 4
    assert [record["step"] for record in option_runs["resumed-fp16"] if record.get("event") == "resumed"] == [4]
    resumed = first[:4] + _updates(option_runs["resumed-fp16"])
    assert [(r["step"], r["loss"], r["loss_scale"], r["skipped_steps"]) for r in resumed] == \
        [(r["step"], pytest.approx(r["loss"], abs=1e-6), r["loss_scale"], r["skipped_steps"]) for r in straight]


def test_accumulated_micro_batches_train_as_one_batch_with_the_gradient_reduced_once(option_runs):
    """Accumulating 4 micro-batches of 2 (losses kept on the device, the ranks' gradients reduced after the last
    micro-batch, and after the first for the noise probe) gives the losses and gradient norms of one batch of 8:
    the same windows, the same update."""
    whole, accumulated = _updates(option_runs["whole"]), _updates(option_runs["accumulated"])
    assert len(whole) == len(accumulated) == 5
    assert [r["loss"] for r in accumulated] == pytest.approx([r["loss"] for r in whole], abs=2e-5)
    assert [r["grad_norm"] for r in accumulated] == pytest.approx([r["grad_norm"] for r in whole], rel=1e-4)
    assert accumulated[-1]["b_noise"] is not None and whole[-1]["b_noise"] is None
    assert whole[-1]["loss"] < whole[0]["loss"] - 0.1                       # it trained


def test_the_doctor_flags_a_resume_from_a_checkpoint_of_another_step(trained):
    """Killed after step 10, resumed with the newest checkpoint's data position and step count but the weights
    and optimizer of step 2 (the drill `resume_weights_from`): the loss jumps back, and the doctor says so."""
    from flows.doctor import doctor

    resumed = trained[1]["misresumed-2"]
    assert [record["step"] for record in resumed if record.get("event") == "resumed"] == [10]
    run = _runs_of("misresumed")["misresumed"]
    checks = [(finding["check"], finding["severe"]) for finding in doctor(run.info.run_id)["findings"]]
    assert ("resume_discontinuity", True) in checks, checks

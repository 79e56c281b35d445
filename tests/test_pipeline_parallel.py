"""Pipeline parallelism for real: torchrun with CPU ranks (gloo) running the model's layers as pipeline stages trains
to the losses, gradient norms, validation loss and final weights of one process, with each schedule tested, and
resumes exactly; layouts the pipeline cannot run are refused when the config is read, naming the field.

Every training of this module runs in one torchrun of 4 ranks (tests/torchrun_training.py, `training_runs`: one
after another, each on the first ranks, as a torchrun of its own size would; its process group its own, its Trainer
built from its config): the ranks import torch and the trainer once, not once per training. The tests then read the
runs' records and checkpoints."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from configs.training import EvalSpec, TrainingConfig
from torchrun_training import TrainedRuns, run, training_config, training_runs
from training.consolidated import consolidated_weights
MODEL = {"preset": "tiny", "n_layers": 4, "tie_embeddings": False}
# the pipelines compared with one process, by the test id of each: schedule, ranks, hardware
PIPELINES = {"1f1b-2": ("1f1b", 2, {"pipeline_parallel": 2, "microbatches": 2}),
             "gpipe-2": ("gpipe", 2, {"pipeline_parallel": 2, "microbatches": 4, "compile": True}),
             "interleaved_1f1b-2": ("interleaved_1f1b", 2, {"pipeline_parallel": 2, "microbatches": 4}),
             "1f1b-4": ("1f1b", 4, {"pipeline_parallel": 2, "data_parallel": 2, "microbatches": 2}),
             "zero_bubble-4": ("zero_bubble", 4, {"pipeline_parallel": 2, "data_parallel": 2, "microbatches": 4})}
SPIKES = {"window": 4, "min_history": 4, "sigmas": 3.0, "max_consecutive": 3}


def _config(tmp_path: Path, shards: list[str], name: str, micro_batch_size: int = 8, **hardware) -> str:
    """Checkpointed at the end (step 4) only; the 1F1B run of 2 stages, which resumes, every 2 steps."""
    every = 2 if name == "1f1b-2" else 4
    return training_config(tmp_path, shards, name, hardware, model=MODEL, micro_batch_size=micro_batch_size,
                           checkpoint=_checkpoints(tmp_path, name, every))


def _checkpoints(tmp_path: Path, name: str, every: int) -> dict:
    """Checkpoints every `every` steps (and at the last): no more than the test reads. Each one costs the ranks
    a DCP save."""
    return {"dir": str(tmp_path / name), "every": every}


def _steps(records: list[dict]) -> list[dict]:
    return [record for record in records if "loss" in record and "event" not in record]


def _weights(tmp_path: Path, name: str, step: int) -> dict[str, torch.Tensor]:
    """A run's checkpoint, read back into one plain model: every stage's parameters, under the model's names."""
    return torch.load(consolidated_weights(str(tmp_path / name / f"step-{step:06d}"), str(tmp_path / f"{name}.pt")))


def _suite(data_dir: Path, folder: Path) -> tuple[str, str]:
    """The evaluation suite (two speeches) and the SentencePiece tokenizer (of a third) it is read with."""
    import sentencepiece as spm

    speeches = data_dir / "reference" / "speeches_nltk" / "inaugural"
    spm.SentencePieceTrainer.train(input=str(speeches / "1789-Washington.txt"), model_prefix=str(folder / "spm"),
                                   vocab_size=400, unk_id=0, bos_id=1, eos_id=2, pad_id=3, byte_fallback=True)
    suite = folder / "suite.jsonl"
    suite.write_text("".join(json.dumps({"domain": domain, "name": name, "text": (speeches / name).read_text()[:3000]})
                             + "\n" for domain, name in [("old", "1797-Adams.txt"), ("new", "1961-Kennedy.txt")]))
    return str(suite), str(folder / "spm.model")


@pytest.fixture(scope="module")
def runs(byte_shards, data_dir, tmp_path_factory) -> tuple[Path, TrainedRuns]:
    """Every training the tests below read, in one torchrun: their folder and each one's records."""
    folder = tmp_path_factory.mktemp("pipelines")
    trainings = {"alone": run(_config(folder, byte_shards, "alone"), ranks=1)}
    for case, (schedule, ranks, hardware) in PIPELINES.items():
        config = _config(folder, byte_shards, case, pipeline_schedule=schedule,
                         micro_batch_size=8 // hardware.get("data_parallel", 1), **hardware)
        # the 1F1B run of 2 stages stops after step 3 (its checkpoint: step 2); a later run resumes it
        trainings[case] = run(config, ranks, stop_after=3 if case == "1f1b-2" else None)
    trainings["accumulated"] = run(training_config(folder, byte_shards, "accumulated", {
        "pipeline_parallel": 2, "microbatches": 2}, model=MODEL, micro_batch_size=4, grad_accumulation=2,
        checkpoint=_checkpoints(folder, "accumulated", 4)), 2)
    # checkpoints at steps 4, 8 (the newest, which the rollback takes) and 10
    trainings["spiky"] = run(training_config(folder, byte_shards, "spiky", {"pipeline_parallel": 2}, model=MODEL,
                                             steps=10, spikes=SPIKES, checkpoint=_checkpoints(folder, "spiky", 4)),
                             2, drills={"bad_batches": [9, 11, 12, 13]})
    for name, ranks, hardware, fields in [("alone-fp16", 1, {}, {"micro_batch_size": 4, "grad_accumulation": 2}),
                                          ("piped-fp16", 2, {"pipeline_parallel": 2, "microbatches": 2}, {})]:
        trainings[name] = run(training_config(folder, byte_shards, name, {
            "dtype": "fp16", "loss_scale": 2.0 ** 20, **hardware}, model=MODEL, steps=6,
            checkpoint=_checkpoints(folder, name, 6), **fields), ranks)
    suite, tokenizer = _suite(data_dir, folder)
    for name, ranks, hardware in [("alone-suite", 1, {}),
                                  ("piped-suite", 2, {"pipeline_parallel": 2, "microbatches": 2})]:
        trainings[name] = run(training_config(
            folder, byte_shards, name, hardware, model=MODEL, steps=2,
            eval={"every": 2, "batches": 1, "suite": suite, "sample_tokens": 12},
            data={"train": byte_shards[:3], "validation": byte_shards[3:], "seed": 0, "bytes_per_token": 1.0,
                  "tokenizer": tokenizer}), ranks)
    trainings["1f1b-2-resumed"] = run(trainings["1f1b-2"]["config"], trainings["1f1b-2"]["ranks"])
    # last, the compiled one: no run after it meets what compiling left in the ranks
    trainings["gpipe-2"] = trainings.pop("gpipe-2")
    return folder, training_runs(trainings, 4)


@pytest.fixture(scope="module")
def alone(runs) -> tuple[list[dict], dict[str, torch.Tensor]]:
    """One process's run: its records and final weights."""
    folder, records = runs
    return records["alone"], _weights(folder, "alone", 4)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(PIPELINES))
def test_pipeline_stages_train_as_one_process(alone, runs, case):
    """The same 8 sequences per update (per replica 8 / data_parallel), split into the pipeline's micro-batches:
    the losses, gradient norms, validation loss and final weights (every stage's checkpoint read back into one
    plain model) of one process (the GPipe run's stages compiled, block by block). A stage missing a layer, a loss not averaged over the micro-batches or a gradient
    norm of one stage only would each differ here. The 1F1B run stops after its checkpoint at step 2 and resumes
    from it (each stage's parameters and optimizer state, the data position) to the same losses."""
    records, alone_weights = alone
    folder, trained = runs
    steps = _steps(records)
    assert len(steps) == 4 and steps[-1]["loss"] < steps[0]["loss"] - 0.1                 # it trained
    piped = trained[case]
    if case == "1f1b-2":
        resumed = trained["1f1b-2-resumed"]
        assert [record["step"] for record in _steps(piped)] == [1, 2, 3]                   # stopped after step 3
        assert any(record.get("event") == "resumed" and record["step"] == 2 for record in resumed)
        piped = [record for record in piped if record.get("step", 0) <= 2] + resumed
    assert [record["step"] for record in _steps(piped)] == [1, 2, 3, 4]
    for key in ("loss", "grad_norm"):
        assert [record[key] for record in _steps(piped)] == pytest.approx([record[key] for record in steps],
                                                                          rel=1e-4)
    evaluation = [next(record["val_loss"] for record in run if record.get("event") == "eval")
                  for run in (records, piped)]
    assert evaluation[1] == pytest.approx(evaluation[0], rel=1e-4)
    piped_weights = _weights(folder, case, 4)
    assert alone_weights.keys() == piped_weights.keys()
    for key, weight in alone_weights.items():
        assert torch.allclose(piped_weights[key], weight, rtol=0, atol=2e-5), key



@pytest.mark.slow
def test_accumulated_schedule_runs_train_as_one_batch_and_measure_the_noise_scale(alone, runs):
    """Two runs of the schedule an update (2 x 4 sequences, each in 2 pipeline micro-batches) give one process's
    updates of 8 sequences: each run's gradients are reduced and added, the loss divided by micro-batches x runs
    (the schedule's own division after each run would divide the first run's gradients twice). The noise probe
    reads the first run's gradient over both stages."""
    records, _ = alone
    piped = _steps(runs[1]["accumulated"])
    for key in ("loss", "grad_norm"):
        assert [record[key] for record in piped] == pytest.approx([record[key] for record in _steps(records)],
                                                                  rel=1e-4)
    assert piped[-1]["b_noise"] is not None and piped[-1]["batch_sequences"] == 8

@pytest.mark.slow
def test_the_spike_guard_skips_and_rolls_back_alike_on_every_stage(runs):
    """Random targets at update attempts 9 and 11-13 give the last stage a spike; every rank sees the broadcast
    loss, so each skips those updates, and after three in a row each stage rolls back to the checkpoint at step 8
    and trains steps 9 and 10 again."""
    records = runs[1]["spiky"]
    assert [record["attempt"] for record in records if record.get("event") == "spike_skipped"] == [9, 11, 12, 13]
    assert [(record["attempt"], record["step"]) for record in records if record.get("event") == "rollback"] == \
        [(13, 8)]
    assert [record["step"] for record in _steps(records)] == list(range(1, 10)) + [9, 10]


@pytest.mark.slow
def test_fp16_pipeline_stages_skip_the_overflowing_steps_together(runs):
    """fp16 from a loss scale too large (2^20): only the last stage computes the loss (and scales it), yet every
    stage's overflow check is reduced over all ranks, so both stages skip the same steps with the same halved
    scales as one process accumulating the same micro-batches (each one's loss halved before its backward pass, as
    the pipeline's), and then train to its losses. A stage that stepped alone would part from them."""
    alone, piped = (_steps(runs[1][name]) for name in ("alone-fp16", "piped-fp16"))
    assert alone[0]["grad_norm"] is None and alone[-1]["grad_norm"] is not None          # overflowed, skipped
    for key in ("loss_scale", "skipped_steps"):
        assert [record[key] for record in piped] == [record[key] for record in alone]
    assert [record["loss"] for record in piped] == pytest.approx([record["loss"] for record in alone], rel=1e-4)
    assert alone[-1]["loss"] < alone[0]["loss"] - 0.1                                    # it trained


@pytest.mark.slow
def test_the_evaluation_suite_and_the_samples_of_pipeline_stages_are_one_process_s(runs):
    """The suite's bits per byte (each window's NLL summed on the last stage, broadcast over the pipeline) and the
    greedy continuations of the prompts (each next token's logits from a forward pass of the schedule) at the last
    step of a 2-stage run equal one process's; the suite is two speeches in a SentencePiece tokenizer's ids."""
    def evaluation(name: str) -> tuple[dict[str, float], str]:
        records = runs[1][name]
        scores = next(record for record in records if record.get("event") == "eval")
        samples = next(record["samples"] for record in records if record.get("event") == "samples")
        return {key: value for key, value in scores.items() if key.startswith("suite_bpb/")}, samples

    (alone, alone_samples), (piped, piped_samples) = evaluation("alone-suite"), evaluation("piped-suite")
    assert set(alone) == {"suite_bpb/old", "suite_bpb/new", "suite_bpb/macro"}
    assert piped == pytest.approx(alone, rel=1e-5)
    assert piped_samples == alone_samples and alone_samples.count(" -> ") == len(EvalSpec().prompts)

def _hardware(**fields) -> dict:
    return {"model": MODEL, "hardware": fields}


@pytest.mark.parametrize("config, named", [
    (_hardware(pipeline_parallel=3), r"model.n_layers \(4\) not divisible into 3 pipeline stages"),
    (_hardware(pipeline_parallel=2, pipeline_schedule="interleaved_1f1b"),
     r"hardware.microbatches \(2\) fewer than the 4 pipeline stages"),
    (_hardware(pipeline_parallel=2, microbatches=3), r"micro_batch_size \(8\) not divisible by hardware.microbatches"),
    (_hardware(pipeline_parallel=2, pipeline_schedule="interleaved_1f1b", microbatches=5),
     r"hardware.microbatches \(5\) not a multiple of hardware.pipeline_parallel \(2\) under interleaved_1f1b"),
    (_hardware(pipeline_parallel=2, pipeline_schedule="zero_bubble", microbatches=5),
     r"hardware.microbatches \(5\) not a multiple of hardware.pipeline_parallel \(2\) under zero_bubble"),
    ({"model": {"preset": "tiny"}, "hardware": {"pipeline_parallel": 2}}, r"model.tie_embeddings \(true\)"),
    (_hardware(pipeline_parallel=2, compile=True, pipeline_schedule="zero_bubble", microbatches=4),
     "hardware.compile with hardware.pipeline_schedule zero_bubble is not supported"),
])
def test_layouts_the_pipeline_cannot_run_are_refused_naming_the_field(config, named):
    with pytest.raises(ValueError, match=named):
        TrainingConfig.model_validate(config)


def test_the_run_has_pipeline_times_data_times_tensor_parallel_ranks():
    hardware = TrainingConfig.model_validate(_hardware(pipeline_parallel=2, data_parallel=2)).hardware
    assert (hardware.ranks, hardware.pipeline_stages, hardware.pipeline_microbatches) == (4, 2, 2)
    hardware = TrainingConfig.model_validate(_hardware(pipeline_parallel=2, pipeline_schedule="interleaved_1f1b",
                                                       microbatches=4)).hardware
    assert (hardware.ranks, hardware.pipeline_stages, hardware.stages_per_rank) == (2, 4, 2)
    hardware = TrainingConfig.model_validate(_hardware(pipeline_parallel=2, data_parallel=2,
                                                       tensor_parallel=2)).hardware
    assert (hardware.ranks, hardware.pipeline_stages) == (8, 2)

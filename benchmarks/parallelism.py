"""`sluice plan`'s pipeline bubble and per-rank memory against a measured training on CPU, per layout and schedule.

    .venv/bin/python benchmarks/parallelism.py [--steps 10] [--warmup 3] [--widths 128 256]

Each layout is the project's trainer under torchrun (gloo, one thread per rank, fp32, 8 layers of each d_model in
`--widths`, seq 128, 8 sequences per micro-batch and replica; a pipeline splits them into 2 x pipeline_parallel
micro-batches). A wider model spends more of a micro-batch's time computing, against the fixed costs of the
schedule's Python and the sends between stages, which the plan's bubble does not count. The trainer hook `instrument` (training/train.py's SLUICE_TRAIN_HOOK) times, on every rank:
- busy: its stages' compute, the PipelineStage's forward_one_chunk and backward_one_chunk and the last stage's loss
  (without a pipeline: the forward and backward passes of the update); FSDP's and tensor parallelism's collectives
  inside them count as busy, the pipeline's sends and receives between them do not;
- the update's forward and backward wall time, up to the gradient clip's reduction over the pipeline, which waits
  for the last backward pass: the idle share is 1 - busy / that time, compared with the plan's bubble.
Peak memory per rank: the rise of the rank's peak resident set (VmHWM, reset through /proc/self/clear_refs when the
trainer is built) over its resident set then, plus the parameters it held then. torch's CPU allocator keeps no
statistics; glibc would keep freed memory in its heap, so the ranks run with a fixed MALLOC_MMAP_THRESHOLD_ that
hands every tensor over 64 KiB back to the system when freed, and the resident set follows the live tensors.
Writes results/parallelism.json, with the figures of results/precision.json beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gpu_check import text_shards  # noqa: E402
from benchmarks.harness import RESULTS, WORK, goal, log, write_result  # noqa: E402
from configs.training import TrainingConfig  # noqa: E402
from flows.torchrun import torchrun_command, trainer_env  # noqa: E402
from training.plan import plan  # noqa: E402
from training.train import HOOK_ENV  # noqa: E402

OUT_ENV = "SLUICE_PARALLELISM_OUT"
MODEL = {"preset": "tiny", "n_layers": 8, "n_heads": 4, "seq_len": 128, "tie_embeddings": False}     # + d_model
MICRO_BATCH = 8
# name: hardware; pp2 alone has 2 ranks on the 2 cores, the others 4 ranks time-sharing them
LAYOUTS = {
    "pp2_gpipe": {"pipeline_parallel": 2, "pipeline_schedule": "gpipe"},
    "pp2_1f1b": {"pipeline_parallel": 2, "pipeline_schedule": "1f1b"},
    "pp2_dp2_gpipe": {"pipeline_parallel": 2, "data_parallel": 2, "pipeline_schedule": "gpipe"},
    "pp2_dp2_1f1b": {"pipeline_parallel": 2, "data_parallel": 2, "pipeline_schedule": "1f1b"},
    "dp2_tp2": {"data_parallel": 2, "tensor_parallel": 2},
    "pp4_gpipe": {"pipeline_parallel": 4, "pipeline_schedule": "gpipe"},
    "pp4_1f1b": {"pipeline_parallel": 4, "pipeline_schedule": "1f1b"},
    "pp4_interleaved_1f1b": {"pipeline_parallel": 4, "pipeline_schedule": "interleaved_1f1b"},
    "pp4_zero_bubble": {"pipeline_parallel": 4, "pipeline_schedule": "zero_bubble"},
    "pp2_tp2_1f1b": {"pipeline_parallel": 2, "tensor_parallel": 2, "pipeline_schedule": "1f1b"},
}
GOALS = {"bubble_points": 5.0, "memory_ratio": 0.15}      # the issue's: within 5 points, within 15%
MALLOC_MMAP_THRESHOLD = "65536"
RUN_TIMEOUT_S = 900


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per layout, after the warm-up")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--layouts", nargs="*", choices=list(LAYOUTS), default=list(LAYOUTS))
    parser.add_argument("--widths", nargs="*", type=int, default=[128], help="d_model of each model measured")
    parser.add_argument("--out", type=Path, default=RESULTS / "parallelism.json")
    args = parser.parse_args(argv)
    work = WORK / "parallelism"
    shutil.rmtree(work, ignore_errors=True)
    shards = text_shards(work / "shards", 2_000_000)
    layouts, load = {}, os.getloadavg()[0]       # other work on the cores distorts the timings too
    for width in args.widths:
        for name in args.layouts:
            key = f"{name}_d{width}"
            layouts[key] = measure(work / key, name, width, shards, args.steps + args.warmup, args.warmup)
            log(f"{key}: {json.dumps({field: layouts[key][field] for field in ('idle_share', 'plan_bubble')})}")
    written = write_result(args.out, {
        "model": MODEL, "widths": args.widths, "micro_batch_per_replica": MICRO_BATCH, "dtype": "fp32",
        "timed_steps": args.steps,
        "warmup_steps": args.warmup, "load_average_1min": {"before": load, "after": os.getloadavg()[0]},
        "note": ("4-rank layouts run 4 single-threaded ranks on the machine's cores (2 here): ranks time-share them, "
                 "so a rank's compute is slowed while others compute, which distorts idle shares; pp2_* (2 ranks) "
                 "are not oversubscribed"),
        "layouts": layouts, "goals": goals(layouts), "precision": precision_figures()}, "parallelism.py", argv)
    print(json.dumps(written["goals"], indent=1))
    return 0


def training_config(name: str, width: int, shards: list[str], steps: int, folder: Path) -> TrainingConfig:
    hardware = {"device": "cpu", "dtype": "fp32", **LAYOUTS[name]}
    if hardware.get("pipeline_parallel", 1) > 1:
        hardware["microbatches"] = 2 * hardware["pipeline_parallel"]
    return TrainingConfig.model_validate({
        "name": f"parallelism-{name}", "model": MODEL | {"d_model": width}, "micro_batch_size": MICRO_BATCH,
        "steps": steps, "seed": 0,
        "data": {"train": shards, "seed": 0}, "optimizer": {"lr": 1e-3, "warmup_steps": 2},
        "checkpoint": {"dir": str(folder / "checkpoints"), "every": 1_000_000}, "mlflow": {"enabled": False},
        "log_every": 1_000_000, "hardware": hardware})


def measure(folder: Path, name: str, width: int, shards: list[str], steps: int, warmup: int) -> dict:
    """One layout's torchrun: per rank its idle share and peak memory over the timed steps, the layout's tokens/s,
    and the plan's bubble and memory per rank."""
    folder.mkdir(parents=True)
    config = training_config(name, width, shards, steps, folder)
    path = folder / "config.json"
    path.write_text(config.model_dump_json())
    ranks = config.hardware.ranks
    env = trainer_env() | {HOOK_ENV: "benchmarks.parallelism:instrument", OUT_ENV: str(folder),
                           "MALLOC_MMAP_THRESHOLD_": MALLOC_MMAP_THRESHOLD}
    done = subprocess.run(torchrun_command(str(path), ranks), env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    per_rank = [json.loads((folder / f"rank-{rank}.json").read_text()) for rank in range(ranks)]
    figures = plan(config)
    idle = [idle_share(record["steps"][warmup:]) for record in per_rank]
    peaks = [round(record["peak_bytes"] / 1e9, 4) for record in per_rank]
    step_seconds = statistics.fmean(step["step_s"] for step in per_rank[0]["steps"][warmup:])
    return {"ranks": ranks, "hardware": config.hardware.model_dump(include=set(LAYOUTS[name]) | {"microbatches"},
                                                                   exclude_none=True),
            "idle_share_per_rank": idle, "idle_share": round(statistics.fmean(idle), 4),
            "plan_bubble": figures["pipeline_bubble_fraction"],
            "peak_memory_gb_per_rank": peaks, "peak_memory_gb": max(peaks),
            "plan_memory_gb_per_rank": figures["planned_memory_gb_per_rank"],
            "tokens_per_s": round(figures["tokens_per_update"] / step_seconds, 1)}


def idle_share(steps: list[dict]) -> float:
    """1 - the rank's compute over the wall time of the updates' forward and backward passes."""
    return round(1 - sum(step["busy_s"] for step in steps) / sum(step["passes_s"] for step in steps), 4)


def goals(layouts: dict[str, dict]) -> dict:
    """Per layout: the measured bubble within 5 points of the plan's (GPipe and 1F1B; the others reported too), the
    busiest rank's peak memory within 15% of the plan's."""
    return {name: {"bubble_points": goal(round(abs(layout["idle_share"] - layout["plan_bubble"]) * 100, 2), "<=",
                                         GOALS["bubble_points"]),
                   "memory_ratio": goal(round(abs(layout["peak_memory_gb"] / layout["plan_memory_gb_per_rank"] - 1), 3),
                                        "<=", GOALS["memory_ratio"])}
            for name, layout in layouts.items()}


def precision_figures() -> dict:
    """results/precision.json's loss gaps and skipped steps, and where they come from."""
    recorded = json.loads((RESULTS / "precision.json").read_text())
    return {"source": "results/precision.json", "command": recorded["command"], "commit": recorded["commit"],
            **{key: recorded[key] for key in ("max_gap_vs_fp32", "final_loss", "skipped_steps")}}


# ------------------------------------------------------------------------------------------- in each rank

class RankTimer:
    """The rank's busy time (its stages' compute); per update, the wall time of the update, of its forward and
    backward passes, and the busy time within them; its peak resident set after the last update."""

    def __init__(self):
        self.busy, self.steps, self.peak = 0.0, [], 0

    def busy_in(self, function):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.busy += time.perf_counter() - start
        return timed

    def update(self, train_step, forward_backward):
        """train_step and forward_backward timed; each update's record appended."""
        passes = {}

        def timed_passes(*args, **kwargs):
            start, busy = time.perf_counter(), self.busy
            try:
                return forward_backward(*args, **kwargs)
            finally:
                passes.update(passes_s=time.perf_counter() - start, busy_s=self.busy - busy)

        def timed_step(*args, **kwargs):
            start = time.perf_counter()
            record = train_step(*args, **kwargs)
            self.steps.append({"step_s": time.perf_counter() - start, **passes})
            self.peak = _status_bytes("VmHWM")          # before the checkpoint the last update is followed by
            return record
        return timed_step, timed_passes


def instrument(trainer) -> None:
    """SLUICE_TRAIN_HOOK: time this rank's compute and updates, reset its peak resident set, and write its figures
    to $SLUICE_PARALLELISM_OUT/rank-<rank>.json when the training finishes."""
    timer = RankTimer()
    if hasattr(trainer.runner, "schedule"):            # the pipeline's stages (training/pipeline_parallel.py)
        schedule = trainer.runner.schedule
        for stage in getattr(schedule, "_stages", None) or [schedule._stage]:
            stage.forward_one_chunk = timer.busy_in(stage.forward_one_chunk)
            stage.backward_one_chunk = timer.busy_in(stage.backward_one_chunk)
            stage.backward_weight_one_chunk = timer.busy_in(stage.backward_weight_one_chunk)    # zero bubble's
        schedule._maybe_compute_loss = timer.busy_in(schedule._maybe_compute_loss)
    else:
        trainer.accumulate = timer.busy_in(trainer.accumulate)
    trainer.train_step, trainer.forward_backward = timer.update(trainer.train_step, trainer.forward_backward)
    held = sum(_local(parameter).nbytes for parameter in trainer.model.parameters())
    Path("/proc/self/clear_refs").write_text("5")          # VmHWM := VmRSS
    baseline = _status_bytes("VmRSS")
    finish = trainer.finish

    def finished():
        finish()
        record = {"rank": trainer.env.rank, "steps": timer.steps,
                  "peak_bytes": timer.peak - baseline + held}
        (Path(os.environ[OUT_ENV]) / f"rank-{trainer.env.rank}.json").write_text(json.dumps(record))
    trainer.finish = finished


def _local(parameter):
    return parameter.to_local() if hasattr(parameter, "to_local") else parameter


def _status_bytes(field: str) -> int:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


if __name__ == "__main__":
    sys.exit(main())

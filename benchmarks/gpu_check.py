"""The trainer on the hardware it is for, in one command: throughput and MFU, peak memory against `sluice plan`,
bf16 against fp32, and an interrupted run resumed against an uninterrupted one.

    bash benchmarks/gpu_check.sh --clean-commit SHA               # on a GPU machine: carried wheels, then this
    .venv/bin/python benchmarks/gpu_check.py --device cpu --out DIR   # the same check at tiny sizes (a test runs it)

Every run is the project's own trainer (`training.train` under torchrun, one rank per GPU, MLflow off: the GPU
image has no MLflow), on token shards this script writes first: the bytes of the Python sources of the standard
library and of torch, real text that any machine with the trainer has. Shards, configs and checkpoints go to a
temporary folder (a run's folder is removed once read), not to `--out`. The runs go one after another to one warm
torchrun (flows/trainer_pool.py: its start-up, CUDA's and NCCL's set-up paid once, not once a run; compiled graphs,
cached memory and the peak-memory figure reset between runs). A run that fails stops that torchrun and is recorded
with the end of its output; the next run starts another and the check goes on. `gpu.json` is rewritten after each
part, so a check stopped at its time limit still returns what it measured. What is run, in order:
- *throughput*: the 124M preset (GPT-2 small, seq 1024) in bf16 with per-block `torch.compile`, at the largest
  power-of-two micro-batch the plan puts under `PLAN_SHARE` of the device's memory (halved after an
  out-of-memory); the same without compile, and with activation checkpointing. Tokens/s is the median over the
  steps after the first `WARMUP_STEPS` (the trainer times a step by CUDA events); MFU counts 6N + 12·L·d·seq FLOPs
  per token against the device's dense bf16 peak (`training.plan.PEAK_FLOPS`). Each run's peak allocated memory
  beside the plan's figure for the same config.
- *precision*: bf16 and fp32 from the same initial weights over the same `PRECISION_STEPS` batches; the gap is
  the largest difference of their 10-step mean losses, against `BF16_TOLERANCE_NATS`.
- *resume*: a run stopped at half way and resumed against the same run uninterrupted, step by step; a second
  uninterrupted run says how far two identical runs differ on this device (nondeterministic kernels), which is
  what a resumed run can be held to.
- *bigger*: the 350M preset's throughput and memory, if the time budget allows.
Writes `gpu.json` (and the runs' output, `gpu_check.log`) into `--out` and prints a table.
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from configs.training import TrainingConfig  # noqa: E402
from dev.interrupted_run import stop_after_env  # noqa: E402
from flows.trainer_pool import WarmTrainers  # noqa: E402
from flows.torchrun import kill_group  # noqa: E402
from storage.token_shard import TokenShardWriter  # noqa: E402
from training.plan import DEVICE_MEMORY_GB, PEAK_FLOPS, plan  # noqa: E402

PLAN_SHARE = 0.6            # the plan leaves out fragmentation, compile workspaces, whole-model compile (+14%)
RUN_TIMEOUT_S = 300         # one torchrun: a hung collective must not take the whole lease
OUT_OF_MEMORY = ("OutOfMemoryError", "CUDA out of memory")
WARMUP_STEPS = 10
BF16_TOLERANCE_NATS = 0.05
SMOOTHING_STEPS = 10
PARTS = ("throughput", "precision", "resume", "bigger")    # in this order; bigger only within the budget
SIZES = {   # per device kind: model, steps of each measurement, the text the shards hold
    "cuda": {"model": {"preset": "124M"}, "bigger": {"preset": "350M"}, "throughput_steps": 30,
             "precision_steps": 200, "precision_micro_batch": 4, "resume_steps": 20, "shard_bytes": 12_000_000},
    # CPU: that every part runs and writes its figures (tests/test_gpu_check.py), at the least cost: a run is mostly
    # its torchrun's start-up and, compiled, inductor's compile of a one-block model (the bigger model's two blocks
    # are that block again: its cache). A throughput run's micro-batch is `micro_batch` (no memory plan on CPU);
    # 40 precision steps take the loss from 6.0 to 4.8, under the 5.0 the test holds as trained.
    "cpu": {"model": {"preset": "tiny", "n_layers": 1}, "bigger": {"preset": "tiny", "n_layers": 2},
            "micro_batch": 2, "throughput_steps": 3, "precision_steps": 40, "precision_micro_batch": 4,
            "resume_steps": 4, "shard_bytes": 600_000},
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--budget-s", type=float, default=240.0, help="skip the bigger model after this long")
    parser.add_argument("--clean-commit", metavar="SHA", help=(
        "the commit whose clean tree this runs, recorded with dirty false: the device's copy of the tree has no git, "
        "so the session checks `git status` here before the call and names HEAD"))
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"which of {', '.join(PARTS)} to run (a rerun on a lent GPU's last minutes)")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if unknown := set(parts) - set(PARTS):
        parser.error(f"unknown parts {sorted(unknown)}: choose from {', '.join(PARTS)}")
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as work:
        check = Check(args.device, Path(work), args.out / "gpu_check.log")
        result = {"command": f"python3 benchmarks/gpu_check.py {' '.join(argv)}", **environment(args.device),
                  **({"commit": args.clean_commit, "dirty": False} if args.clean_commit else {}),
                  "model": check.sizes["model"], "bigger_model": check.sizes["bigger"]}
        for part in (name for name in PARTS[:-1] if name in parts):
            result |= getattr(check, part)()
            _write(args.out, result, started)
        if "bigger" in parts and time.monotonic() - started < args.budget_s:
            result |= check.bigger()
        elif "bigger" in parts:
            result["bigger_skipped"] = (f"the check had run {time.monotonic() - started:.0f} s of its "
                                        f"{args.budget_s:.0f} s budget")
        _write(args.out, result, started)
        check.trainers.close()
        check.log.close()
    print(table(result))
    return 0


def _write(out: Path, result: dict, started: float) -> None:
    result["seconds"] = round(time.monotonic() - started, 1)
    (out / "gpu.json").write_text(json.dumps(result, indent=2) + "\n")


def environment(device: str) -> dict:
    import torch

    facts = {"device": platform.processor() or platform.machine(), "torch": torch.__version__,
             "cuda": torch.version.cuda, "python": platform.python_version()}
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        facts |= {"device": properties.name, "device_memory_gb": round(properties.total_memory / 1e9, 1),
                  "gpus": torch.cuda.device_count()}
    return facts


def device_kind(device: str) -> str:
    """The planner's name for this device ("h100", ...), "cpu" when it has none."""
    if device == "cpu":
        return "cpu"
    import torch

    name = torch.cuda.get_device_name(0).lower()
    return next((kind for kind in DEVICE_MEMORY_GB if kind.split("-")[0] in name), "cpu")


class Check:
    def __init__(self, device: str, work: Path, log: Path):
        self.device, self.sizes, self.kind = device, SIZES[device], device_kind(device)
        self.work = work
        self.log = log.open("w")
        self.shards = text_shards(self.work / "shards", self.sizes["shard_bytes"])
        self.ranks = max(1, _gpus()) if device == "cuda" else 1
        self.runs = 0
        self.trainers = WarmTrainers()        # every run by one torchrun: its start-up once, not once a run

    def throughput(self) -> dict:
        model = self.sizes["model"]
        micro_batch, first = self.fitting_run(model, {"compile": True})
        runs = {"bf16_compile": first,
                "bf16_compile_model": self.train(model, micro_batch, self.sizes["throughput_steps"],
                                                 {"compile": True, "compile_scope": "model"}),
                "bf16": self.train(model, micro_batch, self.sizes["throughput_steps"], {"compile": False}),
                "bf16_compile_activation_checkpointing": self.train(
                    model, micro_batch, self.sizes["throughput_steps"],
                    {"compile": True, "activation_checkpointing": True})}
        return {"micro_batch": micro_batch, "tokens_per_s_124m": first.get("tokens_per_s"),
                "mfu_124m_bf16_compile": first.get("mfu"), **self.configurations(runs)}

    def bigger(self) -> dict:
        micro_batch, run = self.fitting_run(self.sizes["bigger"], {"compile": True})
        return {"bigger_micro_batch": micro_batch, "mfu_350m_bf16_compile": run.get("mfu"),
                "tokens_per_s_350m": run.get("tokens_per_s"), "peak_memory_gb_350m": run.get("peak_memory_gb"),
                "plan_memory_gb_350m": run.get("plan_memory_gb"), "bigger_error": run.get("error")}

    def precision(self) -> dict:
        steps, micro = self.sizes["precision_steps"], self.sizes["precision_micro_batch"]
        runs = {dtype: self.train(self.sizes["model"], micro, steps, {}, dtype=dtype, warmup=steps // 10)
                for dtype in ("bf16", "fp32")}
        losses = {dtype: run.get("losses", []) for dtype, run in runs.items()}
        if not all(len(curve) == steps for curve in losses.values()):
            return {"bf16_vs_fp32_max_loss_gap": None, "precision_error": _errors(runs)}
        gap = max(abs(a - b) for a, b in zip(moving_mean(losses["bf16"]), moving_mean(losses["fp32"])))
        return {"bf16_vs_fp32_max_loss_gap": round(gap, 4), "bf16_tolerance_nats": BF16_TOLERANCE_NATS,
                "bf16_within_tolerance": gap <= BF16_TOLERANCE_NATS, "precision_steps": steps,
                "final_loss": {dtype: round(statistics.fmean(curve[-SMOOTHING_STEPS:]), 4)
                               for dtype, curve in losses.items()}}

    def resume(self) -> dict:
        steps, micro = self.sizes["resume_steps"], self.sizes["precision_micro_batch"]
        half = steps // 2
        whole = self.train(self.sizes["model"], micro, steps, {}, checkpoint_every=half)
        again = self.train(self.sizes["model"], micro, steps, {}, checkpoint_every=half)
        folder = self.work / "resumed"
        self.train(self.sizes["model"], micro, steps, {}, checkpoint_every=half, folder=folder, stop_after=half)
        resumed = self.train(self.sizes["model"], micro, steps, {}, checkpoint_every=half, folder=folder)
        after = [whole.get("losses", [])[half:], resumed.get("losses", [])]
        if len(after[0]) != steps - half or len(after[1]) != steps - half:
            return {"resume_exact": None, "resume_error": _errors({"whole": whole, "resumed": resumed})}
        rerun_gap = max(abs(a - b) for a, b in zip(whole["losses"], again.get("losses", whole["losses"])))
        return {"resume_exact": after[0] == after[1], "resume_max_loss_gap": max(abs(a - b) for a, b in zip(*after)),
                "rerun_max_loss_gap": rerun_gap, "resumed_at_step": half, "resume_steps": steps}

    def fitting_run(self, model: dict, hardware: dict) -> tuple[int, dict]:
        """The largest power-of-two micro-batch the plan puts under PLAN_SHARE of the device, halved on failure."""
        limit = PLAN_SHARE * (DEVICE_MEMORY_GB.get(self.kind) or 0)
        micro_batch = 1
        while limit and plan(self.config(model, micro_batch * 2, 1, hardware))["planned_memory_gb_per_rank"] < limit:
            micro_batch *= 2
        micro_batch = micro_batch if limit else self.sizes.get("micro_batch", 8)
        while True:
            run = self.train(model, micro_batch, self.sizes["throughput_steps"], hardware)
            if not run.get("out_of_memory") or micro_batch == 1:
                return micro_batch, run
            micro_batch //= 2

    def configurations(self, runs: dict[str, dict]) -> dict:
        return {"peak_memory_gb": {name: run.get("peak_memory_gb") for name, run in runs.items()},
                "plan_memory_gb": {name: run.get("plan_memory_gb") for name, run in runs.items()},
                "tokens_per_s": {name: run.get("tokens_per_s") for name, run in runs.items()},
                "mfu": {name: run.get("mfu") for name, run in runs.items()},
                "errors": {name: run["error"] for name, run in runs.items() if "error" in run}}

    def config(self, model: dict, micro_batch: int, steps: int, hardware: dict, dtype: str = "bf16",
               warmup: int = 10, folder: Path | None = None, checkpoint_every: int = 100_000) -> TrainingConfig:
        return TrainingConfig.model_validate({
            "name": "gpu-check", "model": model, "micro_batch_size": micro_batch, "steps": steps, "seed": 0,
            "data": {"train": self.shards, "seed": 0}, "optimizer": {"lr": 6e-4, "warmup_steps": warmup},
            "checkpoint": {"dir": str(folder or self.work / "checkpoints"), "every": checkpoint_every},
            "mlflow": {"enabled": False}, "log_every": 1_000_000,
            "hardware": {"device": self.kind, "dtype": dtype, "data_parallel": self.ranks, **hardware}})

    def train(self, model: dict, micro_batch: int, steps: int, hardware: dict, dtype: str = "bf16",
              warmup: int = 10, checkpoint_every: int = 100_000, folder: Path | None = None,
              stop_after: int | None = None) -> dict:
        """One torchrun of the trainer: its per-step losses, median tokens/s and MFU after warmup, peak memory and
        the plan's; or the error that ended it."""
        self.runs += 1
        own_folder = folder is None
        if own_folder:
            folder = self.work / f"run-{self.runs:02d}"
        config = self.config(model, micro_batch, steps, hardware, dtype, warmup, folder, checkpoint_every)
        path = self.work / f"run-{self.runs:02d}.yaml"
        path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
        label = f"run {self.runs}: {model} micro-batch {micro_batch}, {dtype}, {hardware or 'eager'}, {steps} steps"
        print(label, flush=True)
        self.log.write(f"\n=== {label}\n")
        output, status = self.run_job(str(path), stop_after_env(stop_after) if stop_after else {})
        self.log.write(output)
        self.log.flush()
        if own_folder:
            shutil.rmtree(folder, ignore_errors=True)      # its checkpoints: GBs at 124M
        records = step_records(output)
        figures = plan(config)
        run = {"losses": [record["loss"] for record in records],
               "plan_memory_gb": figures["planned_memory_gb_per_rank"],
               "skipped_steps": records[-1].get("skipped_steps") if records else None,     # fp16 only
               "loss_scale": records[-1].get("loss_scale") if records else None}
        if status:
            return run | {"error": _cause(output), "out_of_memory": any(text in output for text in OUT_OF_MEMORY)}
        timed = records[WARMUP_STEPS:] or records
        tokens_per_s = statistics.median(record["tokens_per_s"] for record in timed)
        peak = PEAK_FLOPS.get((self.kind, dtype))
        memory = [record["peak_memory_gb"] for record in records if record.get("peak_memory_gb") is not None]
        return run | {"tokens_per_s": round(tokens_per_s, 1),
                      "mfu": round(figures["flops_per_token"] * tokens_per_s / (peak * self.ranks), 4) if peak else None,
                      "peak_memory_gb": max(memory) if memory else None}


    def run_job(self, config_path: str, env: dict[str, str]) -> tuple[str, int]:
        """The run by the warm trainer (flows/trainer_pool.py), `env` added to its ranks': its output and exit status.
        A run that fails or outlasts RUN_TIMEOUT_S (a hung collective must not take the whole lease) stops the
        trainer; the next run starts another."""
        trainer = self.trainers.trainer(self.ranks)
        timer = threading.Timer(RUN_TIMEOUT_S, kill_group, [trainer.process])
        timer.start()
        try:
            output = "".join(trainer.submit(config_path, env))
        finally:
            timer.cancel()
        if trainer.done:
            return output, 0
        self.trainers.drop(trainer)
        status = trainer.process.wait()
        return output + (f"\ntimed out after {RUN_TIMEOUT_S} s" if status < 0 else ""), status or 1


def step_records(output: str) -> list[dict]:
    """The trainer's per-step JSON lines (a line cut short by a killed rank is left out)."""
    records = []
    for line in output.splitlines():
        if line.startswith('{"step"'):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def text_shards(folder: Path, size: int) -> list[str]:
    """Token shards of Python source bytes, the standard library's then torch's (token id = byte), about `size`
    tokens in 4 shards."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    sources = [*sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")),
               *sorted(Path(torch.__file__).parent.rglob("*.py"))]
    text, taken = [], 0
    for path in sources:
        if taken >= size:
            break
        data = path.read_bytes()
        text.append(data)
        taken += len(data)
    if taken < size:
        raise RuntimeError(f"the standard library and torch hold {taken} bytes of Python source, fewer than the "
                           f"{size} the check trains on")
    shards, per_shard = [], len(text) // 4 + 1
    for index in range(4):
        base = folder / f"stdlib-{index}"
        writer = TokenShardWriter(base, vocab_size=256)
        for document in text[index * per_shard:(index + 1) * per_shard]:
            writer.add_document(list(document))
        writer.close()
        shards.append(str(base))
    return shards


def moving_mean(values: list[float], window: int = SMOOTHING_STEPS) -> list[float]:
    return [statistics.fmean(values[start:start + window]) for start in range(len(values) - window + 1)]


def table(result: dict) -> str:
    rows = [f"gpu check on {result['device']} (torch {result['torch']}, CUDA {result['cuda']}): {result['seconds']} s",
            f"{'configuration':40} {'tokens/s':>12} {'MFU':>7} {'peak GB':>8} {'plan GB':>8}"]
    for name, rate in result["tokens_per_s"].items():
        mfu = result["mfu"][name]
        peak = result["peak_memory_gb"][name]
        rows.append(f"{name:40} {rate or 0:12,.0f} {'-' if mfu is None else f'{mfu:.1%}':>7} "
                    f"{'-' if peak is None else f'{peak:.2f}':>8} {result['plan_memory_gb'][name]:8.2f}")
    rows += [f"bf16 vs fp32: largest gap of {SMOOTHING_STEPS}-step mean losses "
             f"{result.get('bf16_vs_fp32_max_loss_gap')} "
             f"nats (tolerance {BF16_TOLERANCE_NATS})",
             f"resume: exact {result.get('resume_exact')}, largest loss gap {result.get('resume_max_loss_gap')} "
             f"(two identical runs: {result.get('rerun_max_loss_gap')})"]
    rows += [f"error in {name}: {error.splitlines()[-1] if error else ''}" for name, error in result["errors"].items()]
    return "\n".join(rows)


def _errors(runs: dict[str, dict]) -> dict:
    return {name: run.get("error", "no error, but fewer steps than planned") for name, run in runs.items()}


def _cause(output: str, lines: int = 12) -> str:
    """What ended a failed run: the end of the rank's own output, before torchrun's traceback and its
    ChildFailedError report; else the output's last lines."""
    kept = output.strip().splitlines()
    report = next((index for index, line in enumerate(kept) if "ChildFailedError" in line), len(kept))
    launcher = max((index for index, line in enumerate(kept[:report]) if line.startswith("Traceback")), default=report)
    return "\n".join((kept[:launcher] or kept)[-lines:])


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


if __name__ == "__main__":
    sys.exit(main())

"""Training throughput on CPU: the sluice trainer (torchrun, 2 processes, FSDP2 over gloo) against a plain
single-process PyTorch loop, same model, same global batch, same data, same machine.

    .venv/bin/python benchmarks/training.py [--steps 30] [--warmup 5] [--accumulations 1 4] [--baseline REV --rounds 3]
        [--nanogpt CHECKOUT]

Data: the UTF-8 bytes of `../shared/data/reference` (wikitext-2, Gutenberg) as token ids, written as token
shards. Model: the tiny preset widened (4 layers, d_model 256, seq 256, vocab 512). Global batch: 16 sequences
per update, measured at each of `--accumulations` (FSDP at accumulation A: 8 / A per rank per micro-batch x 2 ranks
x A; plain: 16 / A in one process x A). `--baseline REV` runs the trainer of that git revision (exported to
`_work/training-baseline`) in turn with this tree's, `--rounds` times each, A B A B: each pair's ratio of median
tokens/s, and their median, say how a change to the trainer moved its speed while the shared machine's speed
drifts. `--nanogpt CHECKOUT` (a clone of github.com/karpathy/nanoGPT) runs its own `train.py` on the same bytes
with the same shapes, batch, learning rate and warm-up, fp32, eager (`compile=False`, as the trainer on CPU) and
with its default `compile=True`: a peer written for speed in one file, as the yardstick.

Fairness: the machine has 2 cores. FSDP runs 2 ranks with 1 thread each; the plain loop gets both cores as
2 intra-op threads (and, for reference, 1 thread). Tokens/s is the median over the steps after `warmup` (each
side's own per-step timing: data, forward, backward, clip, optimizer step). Writes `results/training.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, ROOT, WORK as BENCH_WORK, export_tree, write_result  # noqa: E402
from storage.locations import shared_data_dir  # noqa: E402

WORK = BENCH_WORK / "training-bench"
MODEL = {"preset": "tiny", "n_layers": 4, "d_model": 256, "n_heads": 4, "seq_len": 256, "vocab_size": 512}
GLOBAL_BATCH, RANKS = 16, 2


def byte_sources(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "reference" / "wikitext-2").rglob("*.txt")) + \
        sorted((data_dir / "reference" / "gutenberg_nltk").rglob("*.txt"))


def byte_shards(data_dir: Path) -> list[str]:
    from storage.token_shard import TokenShardWriter

    WORK.mkdir(parents=True, exist_ok=True)
    bases = []
    for index, path in enumerate(byte_sources(data_dir)):
        base = WORK / f"bytes-{index:02d}"
        writer = TokenShardWriter(base, vocab_size=512)
        writer.add_document(list(path.read_bytes()))
        writer.close()
        bases.append(str(base))
    return bases


def training_config(shards: list[str], steps: int, accumulation: int) -> dict:
    return {"name": "bench-fsdp", "model": MODEL, "micro_batch_size": GLOBAL_BATCH // RANKS // accumulation,
            "grad_accumulation": accumulation,
            "steps": steps, "data": {"train": shards, "seed": 0},
            "optimizer": {"lr": 1e-3, "warmup_steps": 2},
            "checkpoint": {"dir": str(WORK / "checkpoints"), "every": 10_000},
            "mlflow": {"experiment": "bench-train", "tracking_uri": f"sqlite:///{WORK}/mlflow.db",
                       "system_metrics_interval_s": None},
            "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": RANKS}}


def fsdp_tokens_per_s(shards: list[str], steps: int, warmup: int, accumulation: int,
                      tree: Path = ROOT) -> tuple[float, list[float]]:
    """The trainer of `tree` (this checkout, or a baseline revision's files)."""
    from flows.torchrun import torchrun_command

    subprocess.run(["rm", "-rf", str(WORK / "checkpoints")], check=True)
    config_path = WORK / "fsdp.yaml"
    config_path.write_text(yaml.safe_dump(training_config(shards, steps, accumulation)))
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(tree)}
    done = subprocess.run(torchrun_command(str(config_path), RANKS), cwd=tree, env=env, capture_output=True,
                          text=True, check=True)
    rates = [json.loads(line)["tokens_per_s"] for line in done.stdout.splitlines() if line.startswith('{"step"')]
    return statistics.median(rates[warmup:]), rates


def plain_tokens_per_s(shards: list[str], steps: int, warmup: int, threads: int,
                       accumulation: int) -> tuple[float, list[float]]:
    """The plain loop: one process, no process group, no sharding; the trainer's model, optimizer and loss."""
    import torch

    from configs.training import TrainingConfig
    from training.model import Transformer
    from training.lr_schedule import learning_rate
    from training.optim import build_optimizer
    from training.plan import model_config
    from training.sequences import TokenSequences
    from training.loss import loss_function

    torch.set_num_threads(threads)
    config = TrainingConfig.model_validate(training_config(shards, steps, accumulation))
    spec, optimizer_spec = model_config(config), config.optimizer
    torch.manual_seed(0)
    model = Transformer(spec)
    optimizer = build_optimizer(model, optimizer_spec)
    data = TokenSequences(shards, spec.seq_len, 0)
    rates = []
    for step in range(steps):
        started = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, steps, optimizer_spec)
        for _ in range(accumulation):
            inputs, targets = (torch.from_numpy(array) for array in data.next_batch(GLOBAL_BATCH // accumulation))
            loss, _ = loss_function(model(inputs), targets, optimizer_spec.z_loss)
            (loss / accumulation).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), optimizer_spec.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
        rates.append(GLOBAL_BATCH * spec.seq_len / (time.perf_counter() - started))
    return statistics.median(rates[warmup:]), rates


def nanogpt_tokens_per_s(checkout: Path, data_dir: Path, steps: int, warmup: int, accumulation: int,
                         compiled: bool) -> tuple[float, list[float]]:
    """nanoGPT's train.py, unchanged, in one process on both cores, on the same bytes as nanoGPT's uint16 token
    file: its per-iteration times from its log (each iteration's data, forward, backward, clip and step)."""
    import pickle

    import numpy as np

    run = WORK / "nanogpt"
    data = run / "data" / "bytes"
    data.mkdir(parents=True, exist_ok=True)
    ids = np.concatenate([np.frombuffer(path.read_bytes(), dtype=np.uint8) for path in byte_sources(data_dir)])
    ids.astype(np.uint16).tofile(data / "train.bin")
    ids[-65_536:].astype(np.uint16).tofile(data / "val.bin")      # its first evaluation reads one batch of it
    (data / "meta.pkl").write_bytes(pickle.dumps({"vocab_size": MODEL["vocab_size"]}))
    for name in ("train.py", "model.py", "configurator.py"):
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(checkout.resolve() / name)
    options = {"dataset": "bytes", "device": "cpu", "dtype": "float32", "compile": compiled,
               "n_layer": MODEL["n_layers"], "n_head": MODEL["n_heads"], "n_embd": MODEL["d_model"],
               "block_size": MODEL["seq_len"], "bias": False, "dropout": 0.0,
               "batch_size": GLOBAL_BATCH // accumulation, "gradient_accumulation_steps": accumulation,
               "max_iters": steps - 1, "learning_rate": 1e-3, "warmup_iters": 2, "lr_decay_iters": steps,
               "eval_interval": 10 * steps, "eval_iters": 1, "log_interval": 1,
               "always_save_checkpoint": False, "out_dir": str(run / "out")}
    command = [sys.executable, "train.py", *(f"--{key}={value}" for key, value in options.items())]
    done = subprocess.run(command, cwd=run, capture_output=True, text=True, check=True)
    times = [float(match) for match in re.findall(r"^iter \d+: loss [\d.]+, time ([\d.]+)ms", done.stdout, re.M)]
    rates = [GLOBAL_BATCH * MODEL["seq_len"] / (ms / 1000) for ms in times]
    return statistics.median(rates[warmup:]), rates


def measure(shards: list[str], steps: int, warmup: int, accumulation: int, nanogpt: Path | None,
            data_dir: Path) -> dict:
    fsdp, fsdp_rates = fsdp_tokens_per_s(shards, steps, warmup, accumulation)
    plain2, _ = plain_tokens_per_s(shards, steps, warmup, 2, accumulation)
    plain1, _ = plain_tokens_per_s(shards, steps, warmup, 1, accumulation)
    figures = {"cpu_fsdp_tokens_per_s": round(fsdp, 1), "cpu_plain_tokens_per_s_2_threads": round(plain2, 1),
               "cpu_plain_tokens_per_s_1_thread": round(plain1, 1),
               "cpu_fsdp_over_plain_tokens_per_s": round(fsdp / plain2, 3),
               "cpu_fsdp_over_plain_1_thread": round(fsdp / plain1, 3), "fsdp_per_step_tokens_per_s": fsdp_rates}
    if nanogpt:
        eager, _ = nanogpt_tokens_per_s(nanogpt, data_dir, steps, warmup, accumulation, compiled=False)
        compiled, _ = nanogpt_tokens_per_s(nanogpt, data_dir, steps, warmup, accumulation, compiled=True)
        figures |= {"cpu_nanogpt_tokens_per_s": round(eager, 1),
                    "cpu_nanogpt_compiled_tokens_per_s": round(compiled, 1),
                    "cpu_fsdp_over_nanogpt": round(fsdp / eager, 3),
                    "cpu_plain_over_nanogpt": round(plain2 / eager, 3),
                    "cpu_fsdp_over_nanogpt_compiled": round(fsdp / compiled, 3)}
    return figures


def against_baseline(shards: list[str], steps: int, warmup: int, accumulation: int, tree: Path,
                     rounds: int) -> dict:
    """This tree's trainer and the baseline's in turn, `rounds` pairs: medians and each pair's ratio."""
    pairs = [(fsdp_tokens_per_s(shards, steps, warmup, accumulation, tree)[0],
              fsdp_tokens_per_s(shards, steps, warmup, accumulation)[0]) for _ in range(rounds)]
    ratios = [round(this / baseline, 3) for baseline, this in pairs]
    return {"baseline_fsdp_tokens_per_s": [round(baseline, 1) for baseline, _ in pairs],
            "this_fsdp_tokens_per_s": [round(this, 1) for _, this in pairs],
            "this_over_baseline_per_pair": ratios, "this_over_baseline": statistics.median(ratios)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--accumulations", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--baseline", help="a git revision whose trainer to time against this tree's")
    parser.add_argument("--rounds", type=int, default=3, help="baseline / this pairs per accumulation")
    parser.add_argument("--data-dir", default=str(shared_data_dir()))
    parser.add_argument("--nanogpt", type=Path, help="a checkout of karpathy/nanoGPT to time side by side")
    parser.add_argument("--out", type=Path, default=RESULTS / "training.json")
    args = parser.parse_args(argv)
    shards = byte_shards(Path(args.data_dir))
    figures = {str(accumulation): measure(shards, args.steps, args.warmup, accumulation, args.nanogpt,
                                          Path(args.data_dir))
               for accumulation in args.accumulations}
    result = {"threads": "OMP_NUM_THREADS=1 per FSDP rank; the plain loop and nanoGPT 2 threads (the plain loop "
                         "also 1)",
              "model": MODEL, "global_batch_sequences": GLOBAL_BATCH,
              "tokens_per_update": GLOBAL_BATCH * MODEL["seq_len"], "accumulation": figures}
    if args.nanogpt:
        result["nanogpt_commit"] = subprocess.run(["git", "-C", str(args.nanogpt), "rev-parse", "HEAD"],
                                                  capture_output=True, text=True, check=True).stdout.strip()
    if args.baseline:
        tree, revision = export_tree(args.baseline, WORK.parent / "training-baseline")
        result["baseline"] = {"revision": revision} | {
            str(accumulation): against_baseline(shards, args.steps, args.warmup, accumulation, tree, args.rounds)
            for accumulation in args.accumulations}
    write_result(args.out, result, "training.py", argv)
    print(json.dumps({accumulation: {key: value for key, value in values.items()
                                     if key != "fsdp_per_step_tokens_per_s"}
                      for accumulation, values in figures.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Training config as far as `sluice plan` reads it: the model, the batch, the run length and the hardware.

The trainer (issue 9) extends this file; the planner's figures come only from these fields.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from configs.base import StrictModel
from configs.parsing import parse_config, read_yaml

Sharding = Literal["none", "zero1", "zero2", "zero3"]


# The presets' sizes (training/model.py's ModelConfig fills in the rest): here, so that a config's layout is checked
# against the model's shape when the config is read. GPT-2's padded vocabulary (50,304) gives the named sizes; a
# recipe's tokenizer size replaces it.
MODEL_PRESETS = {
    "tiny": {"vocab_size": 512, "seq_len": 64, "n_layers": 2, "d_model": 64, "n_heads": 4, "ffn_multiple": 32},
    "124M": {"vocab_size": 50304, "n_layers": 12, "d_model": 768, "n_heads": 12, "seq_len": 1024},
    "350M": {"vocab_size": 50304, "n_layers": 24, "d_model": 1024, "n_heads": 16, "seq_len": 1024},
    "1B": {"vocab_size": 50304, "n_layers": 18, "d_model": 2048, "n_heads": 16, "seq_len": 2048},
}


class ModelSpec(StrictModel):
    preset: Literal["tiny", "124M", "350M", "1B"] = "124M"
    vocab_size: int | None = Field(None, ge=16, description="overrides the preset (the tokenizer's size)")
    seq_len: int | None = Field(None, ge=8)
    n_layers: int | None = Field(None, ge=1)
    d_model: int | None = Field(None, ge=8)
    n_heads: int | None = Field(None, ge=1)
    parametrization: Literal["sp", "mup"] = Field("sp", description=(
        "sp: standard (GPT-2's init, one learning rate); mup: maximal update parametrization (Yang et al. 2022), "
        "under which a learning rate tuned at `base_width` transfers to other widths (training/model.py)"))
    base_width: int | None = Field(None, ge=8, description=(
        "mup: the d_model the learning rate was tuned at, where mup and sp are the same model (default: d_model)"))
    tie_embeddings: bool = Field(True, description=(
        "the output projection is the token embedding's matrix; false: a matrix of its own (needed under "
        "hardware.pipeline_parallel, whose first and last stages are on different ranks)"))

    def shape(self) -> dict:
        """The preset's sizes with the fields given here in their place: training/model.py's ModelConfig."""
        return MODEL_PRESETS[self.preset] | {key: value for key, value in self.model_dump().items()
                                             if key != "preset" and value is not None}


INTERLEAVED = ("interleaved_1f1b", "zero_bubble")       # pipeline schedules running two stages per rank


class HardwareSpec(StrictModel):
    device: Literal["cpu", "h100", "h200", "a100-40gb", "a100-80gb"] = "cpu"
    dtype: Literal["bf16", "fp16", "fp32"] = Field("fp32", description=(
        "bf16 = mixed precision with fp32 master weights (FSDP2's MixedPrecisionPolicy: bf16 compute, fp32 "
        "gradient reduction), on GPU or CPU; fp16 the same in float16, with dynamic loss scaling (steps whose "
        "gradients overflow are skipped, counted and logged)"))
    loss_scale: float = Field(2.0 ** 16, gt=0, description=(
        "fp16: the loss scale to start from (halved after each overflow, doubled after 2000 clean steps)"))
    data_parallel: int = Field(1, ge=1, description="replicas the batch is split over, on all nodes")
    tensor_parallel: int = Field(1, ge=1, description=(
        "ranks each layer's matrices are split over (Megatron-style, with sequence parallelism on the norms); the "
        "run has pipeline_parallel x data_parallel x tensor_parallel ranks, a replica's tensor-parallel ranks "
        "neighbours on one node"))
    nodes: int = Field(1, ge=1, description=(
        "machines the ranks are spread over, ranks / nodes each: one torchrun per node, "
        "launched by a Dask task on a worker offering the `trainer` resource (`dask worker --resources trainer=1`)"))
    dask_address: str | None = Field(None, description=(
        "the Dask scheduler whose workers are the nodes when nodes > 1 (default: $SLUICE_DASK_ADDRESS, which "
        "`sluice server` sets for its deployments)"))
    sharding: Sharding = Field("zero3", description="FSDP fully_shard = zero3")
    activation_checkpointing: bool = Field(False, description="recompute each block's activations in backward")
    compile: bool = Field(False, description="torch.compile (first steps are slower); `compile_scope` says what")
    compile_scope: Literal["blocks", "model"] = Field("blocks", description=(
        "blocks: each transformer block compiled on its own, before sharding (as torchtitan; under "
        "tensor_parallel its attention and MLP); model: the whole sharded model as one compiled module (fewer graph "
        "boundaries; FSDP's hooks break the graph between blocks)"))
    pipeline_parallel: int = Field(1, ge=1, description=(
        "pipeline stages the layers are split over (training/pipeline_parallel.py), the outermost dimension of the "
        "ranks: the run has pipeline_parallel x data_parallel x tensor_parallel ranks"))
    pipeline_schedule: Literal["gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"] = Field("1f1b", description=(
        "torch.distributed.pipelining's GPipe, 1F1B, Interleaved1F1B or InterleavedZeroBubble (Qi et al. 2024: "
        "the backward split into its input and weight passes, the weight passes filling the bubble); the last two "
        "run two stages per rank"))
    microbatches: int | None = Field(None, ge=1, description=(
        "pipeline micro-batches each micro_batch_size batch is split into (default: pipeline_parallel); "
        "grad_accumulation runs the schedule that many times an update"))
    interconnect_gb_per_s: float = Field(400.0, gt=0, description="per-rank all-reduce bandwidth, GB/s")
    checkpoint_write_gb_per_s: float = Field(2.0, gt=0)
    assumed_mfu: float = Field(0.4, gt=0, le=1, description="for the expected wall time")

    @property
    def ranks(self) -> int:
        """Processes the run starts, on all nodes together."""
        return self.pipeline_parallel * self.data_parallel * self.tensor_parallel

    @property
    def stages_per_rank(self) -> int:
        return 2 if self.pipeline_schedule in INTERLEAVED else 1

    @property
    def pipeline_stages(self) -> int:
        """The model's pieces: pipeline_parallel ranks, each running `stages_per_rank` of them."""
        return self.pipeline_parallel * self.stages_per_rank if self.pipeline_parallel > 1 else 1

    @property
    def pipeline_microbatches(self) -> int:
        return self.microbatches or self.pipeline_parallel

    @model_validator(mode="after")
    def _ranks_split_evenly(self) -> "HardwareSpec":
        if self.data_parallel % self.nodes:
            raise ValueError(f"hardware.data_parallel ({self.data_parallel}) must be a multiple of hardware.nodes "
                             f"({self.nodes}): every node runs the same number of replicas, each replica's "
                             f"tensor_parallel ranks on one node")
        if self.compile and self.compile_scope == "model" and self.tensor_parallel > 1:
            raise ValueError(f"hardware.compile_scope model with hardware.tensor_parallel ({self.tensor_parallel}) "
                             f"is not supported: the whole tensor-parallel model fails to compile (torch 2.13); use "
                             f"compile_scope blocks")
        if self.pipeline_parallel > 1 and self.compile and self.pipeline_schedule == "zero_bubble":
            raise ValueError(f"hardware.compile with hardware.pipeline_schedule zero_bubble is not supported: its "
                             f"split backward (input gradients first, weight gradients later) cannot run through "
                             f"compiled blocks (torch 2.13)")
        return self


class OptimizerSpec(StrictModel):
    lr: float = Field(3e-4, gt=0)
    min_lr_ratio: float = Field(0.1, ge=0, le=1, description="cosine decays to lr * this")
    warmup_steps: int = Field(100, ge=0)
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = Field(0.1, ge=0, description="not applied to norms and embeddings")
    grad_clip: float | None = Field(1.0, gt=0, description="global gradient norm limit")
    z_loss: float = Field(1e-4, ge=0, description="weight of log(Z)^2 (PaLM), keeps logits from drifting")


class DataSpec(StrictModel):
    train: list[str] = Field(default_factory=list, description="token shard base paths (a mixture's train.*)")
    validation: list[str] = Field(default_factory=list)
    seed: int = Field(0, ge=0)
    order: Literal["shuffle", "stream"] = Field("shuffle", description=(
        "shuffle: windows in a seeded permutation; stream: in the shards' order (a mixture's seeded stream), "
        "shuffled only within blocks of `stream_block` windows, so runs on mixtures that share pieces see them "
        "at about the same step (what an ablation pairs)"))
    stream_block: int = Field(64, ge=1, description="windows shuffled together under order: stream")
    tokenizer: str | None = Field(None, description="SentencePiece model, to print sampled continuations")
    bytes_per_token: float | None = Field(None, gt=0, description="UTF-8 bytes per token, for bits per byte")


class EvalSpec(StrictModel):
    every: int = Field(50, ge=1, description="steps between evaluations on the validation shards (and at the end)")
    batches: int = Field(4, ge=1, description="micro-batches per evaluation, per rank")
    prompts: list[str] = Field(default_factory=lambda: ["The history of", "In the year", "Die Stadt"])
    sample_tokens: int = Field(24, ge=1)
    suite: str | None = Field(None, description=(
        "an evaluation suite file (suite.jsonl, made by an ablation): exact bits per byte per domain at every "
        "evaluation, as `suite_bpb/<domain>` and `suite_bpb/macro` (needs data.tokenizer)"))


class SpikeSpec(StrictModel):
    enabled: bool = True
    window: int = Field(50, ge=2, description="accepted losses the mean and deviation are taken over")
    sigmas: float = Field(6.0, gt=0)
    min_std: float = Field(0.05, ge=0, description="floor on the deviation, so a flat curve is not all spikes")
    min_history: int = Field(20, ge=2, description="no spike is called before this many accepted losses")
    max_consecutive: int = Field(3, ge=1, description="spikes in a row that trigger a rollback")


class BatchRampSpec(StrictModel):
    """The global batch grows from `start_accumulation` micro-batches per update to the full `grad_accumulation`
    (GPT-3's ramp, in whole micro-batches). With a ramp the learning-rate schedule and the run's length count
    tokens: the schedule's step is tokens seen / tokens of a full update, and the run stops at the planned tokens."""
    schedule: Literal["none", "linear", "stepwise", "noise_scale"] = Field("none", description=(
        "linear: one more micro-batch at a time, evenly over `tokens`; stepwise: the batch doubles at equal "
        "intervals of `tokens`; noise_scale: every `check_every` updates the batch grows (at most doubling) while "
        "the measured gradient noise scale B_noise exceeds it"))
    start_accumulation: int = Field(1, ge=1, description="micro-batches per update at the start")
    tokens: int = Field(0, ge=0, description="linear and stepwise: the tokens over which the batch reaches full")
    check_every: int = Field(10, ge=1, description="noise_scale: updates between decisions")
    lr_scaling: Literal["none", "sqrt", "linear"] = Field("none", description=(
        "the learning rate times (batch / full batch) to the power 0, 1/2 or 1 while the batch is smaller"))


class TrainMlflowSpec(StrictModel):
    enabled: bool = Field(True, description=(
        "False: no MLflow run, the per-step JSON lines only (a measurement on a machine without MLflow: "
        "benchmarks/gpu_check.py)"))
    experiment: str = Field("sluice-train", min_length=1)
    tracking_uri: str | None = Field(None, description="None: MLFLOW_TRACKING_URI, else SQLite in the state dir")
    tags: dict[str, str] = Field(default_factory=dict, description="lineage: the data manifests the run read")
    log_model: bool = Field(True, description=(
        "log the final checkpoint as an MLflow logged model with its tokenizer (`sluice sample` reads it); a "
        "ladder, whose runs are measurements, turns it off"))
    register_model: str | None = Field(None, description=(
        "register the trained model in MLflow's model registry under this name (tagged with its data's digests); "
        "None: logged with the run, not registered"))
    system_metrics_interval_s: float | None = Field(10.0, gt=0, description=(
        "seconds between MLflow system-metrics samples (CPU, memory, disk, network, GPU); None: off"))

    @model_validator(mode="after")
    def _registered_only_if_logged(self) -> "TrainMlflowSpec":
        if self.register_model and not self.log_model:
            raise ValueError("register_model needs log_model: only a logged model can be registered")
        return self


class CheckpointSpec(StrictModel):
    dir: str = Field(".state/checkpoints/train", description="torch.distributed.checkpoint folders step-NNNNNN")
    every: int = Field(100, ge=1, description="steps between checkpoints (and one at the end)")


class TrainingConfig(StrictModel):
    enabled: bool = Field(True, description="in a curation recipe: train after the mixture (`train:` section)")
    name: str = Field("train", min_length=1)
    data: DataSpec = Field(default_factory=DataSpec)
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    checkpoint: CheckpointSpec = Field(default_factory=CheckpointSpec)
    eval: EvalSpec = Field(default_factory=EvalSpec)
    spikes: SpikeSpec = Field(default_factory=SpikeSpec)
    mlflow: TrainMlflowSpec = Field(default_factory=TrainMlflowSpec)
    log_every: int = Field(10, ge=1, description="steps between MLflow metric batches")
    timeout_s: float | None = Field(None, gt=0, description="the launcher kills every rank after this long")
    seed: int = Field(0, ge=0, description="model initialization")
    model: ModelSpec = Field(default_factory=ModelSpec)
    micro_batch_size: int = Field(8, ge=1, description="sequences per rank per forward/backward")
    grad_accumulation: int = Field(1, ge=1, description="micro-batches per update (the full batch, with a ramp)")
    batch_ramp: BatchRampSpec = Field(default_factory=BatchRampSpec)
    steps: int | None = Field(None, ge=1, description="optimizer updates; or give `tokens` (neither: 100 steps)")
    tokens: int | None = Field(None, ge=1, description="training tokens; rounded up to whole updates")
    hardware: HardwareSpec = Field(default_factory=HardwareSpec)

    @model_validator(mode="after")
    def _consistent(self) -> "TrainingConfig":
        if self.steps is not None and self.tokens is not None:
            raise ValueError("give exactly one of `steps` and `tokens`")
        if self.eval.suite and not self.data.tokenizer:
            raise ValueError("eval.suite needs data.tokenizer: the suite's texts are tokenized with it")
        ramp = self.batch_ramp
        if ramp.schedule != "none" and ramp.start_accumulation >= self.grad_accumulation:
            raise ValueError(f"batch_ramp.start_accumulation ({ramp.start_accumulation}) must be below "
                             f"grad_accumulation ({self.grad_accumulation}), the full batch it ramps to")
        if ramp.schedule in ("linear", "stepwise") and not ramp.tokens:
            raise ValueError(f"a {ramp.schedule} batch_ramp needs `tokens`, the length of the ramp")
        if ramp.schedule == "noise_scale" and ramp.start_accumulation < 2:
            raise ValueError("a noise_scale batch_ramp needs start_accumulation >= 2: the noise scale is measured "
                             "from two batch sizes within an update")
        shape = self.model.shape()
        check_tensor_parallel({name: shape[name] for name in ("n_heads", "vocab_size", "seq_len")},
                              self.hardware.tensor_parallel)
        if self.hardware.pipeline_parallel > 1:
            check_pipeline_parallel(self, shape["n_layers"])
        return self


def check_tensor_parallel(sizes: dict[str, int], tensor_parallel: int) -> None:
    """Tensor parallelism splits the attention heads, the vocabulary (embedding and logits), the MLP's hidden units
    and, on the norms, the sequence evenly over its ranks: `sizes` (model field -> size) that do not divide are an
    error naming the field and the numbers. Checked when the config is read and again when the trainer starts
    (the tokenizer's vocabulary replaces the preset's after the config was read)."""
    uneven = {name: size for name, size in sizes.items() if size % tensor_parallel}
    if uneven:
        named = ", ".join(f"model.{name} ({size})" for name, size in uneven.items())
        raise ValueError(f"{named} not divisible by hardware.tensor_parallel ({tensor_parallel}): tensor "
                         f"parallelism splits each evenly over its ranks")


def check_pipeline_parallel(config: TrainingConfig, n_layers: int) -> None:
    """A pipeline splits the layers evenly into its stages and each micro_batch_size batch evenly into its
    micro-batches, at least one per stage, and needs an output projection of its own; refusals name the field and
    the numbers."""
    hardware = config.hardware
    stages, microbatches = hardware.pipeline_stages, hardware.pipeline_microbatches
    refusals = [
        (n_layers % stages, f"model.n_layers ({n_layers}) not divisible into {stages} pipeline stages "
                            f"(hardware.pipeline_parallel {hardware.pipeline_parallel} x {hardware.stages_per_rank} "
                            f"per rank under {hardware.pipeline_schedule})"),
        (microbatches < stages, f"hardware.microbatches ({microbatches}) fewer than the {stages} pipeline stages"),
        (hardware.pipeline_schedule in INTERLEAVED and microbatches % hardware.pipeline_parallel,
         f"hardware.microbatches ({microbatches}) not a multiple of hardware.pipeline_parallel "
         f"({hardware.pipeline_parallel}) under {hardware.pipeline_schedule}"),
        (config.micro_batch_size % microbatches, f"micro_batch_size ({config.micro_batch_size}) not divisible by "
                                                 f"hardware.microbatches ({microbatches})"),
        (config.model.tie_embeddings, "model.tie_embeddings (true) under hardware.pipeline_parallel "
                                      f"({hardware.pipeline_parallel}): the embedding is on the first stage and "
                                      f"the output projection on the last; set model.tie_embeddings: false"),
    ]
    refused = [message for failed, message in refusals if failed]
    if refused:
        raise ValueError("; ".join(refused))


def load_training_config(path: str | Path) -> TrainingConfig:
    """A training file; its problems a RecipeError, one line per field."""
    return parse_config(TrainingConfig, read_yaml(path, "training file"), str(path), "training file")

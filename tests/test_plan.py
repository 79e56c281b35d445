"""The model against its own formulas, and `sluice plan` against hand computations."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

from configs.training import TrainingConfig, load_training_config
from training.model import Transformer
from training.plan import PlanRefused, check_fits, layer_bytes_per_element, plan
from training.shapes import PRESETS, parameter_count


@pytest.mark.parametrize("preset", ["tiny", "124M"])
def test_parameter_formula_matches_the_model(preset):
    model = Transformer(PRESETS[preset])
    assert sum(p.numel() for p in model.parameters()) == parameter_count(PRESETS[preset])


def test_model_is_causal_with_tied_embeddings():
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"]).eval()
    tokens = torch.randint(0, 512, (2, 32))
    logits = model(tokens)
    assert logits.shape == (2, 32, 512)
    changed = tokens.clone()
    changed[:, 20:] = (changed[:, 20:] + 1) % 512
    assert torch.allclose(model(changed)[:, :20], logits[:, :20], atol=1e-5)      # the future does not leak
    assert not torch.allclose(model(changed)[:, 20:], logits[:, 20:])
    assert model.embedding.weight.data_ptr() == next(p for n, p in model.named_parameters() if "embedding" in n).data_ptr()
    assert model.generate(tokens[:, :4], 5, temperature=0).shape == (2, 9)
    with pytest.raises(ValueError, match="exceeds seq_len"):
        model(torch.zeros(1, 65, dtype=torch.long))


def test_seed_003_batch_and_hand_computed_figures():
    figures = plan(load_training_config("configs/train_seed003.yaml"))
    assert figures["tokens_per_update"] == 8 * 2048 * 16 * 128 == 33_554_432
    n = figures["parameters"]
    model = figures["model"]
    assert figures["flops_per_token"] == 6 * n + 12 * model["n_layers"] * model["d_model"] * model["seq_len"]
    assert figures["steps"] == math.ceil(20.6e9 / 33_554_432)
    # bf16 mixed precision: 2 + 2 + 12 bytes per parameter; ZeRO-3 divides all three by the 128 ranks.
    zero3, none = figures["memory_gb_per_rank"]["zero3"], figures["memory_gb_per_rank"]["none"]
    assert none["optimizer"] == pytest.approx(12 * n / 1e9, abs=1e-3)
    assert zero3["parameters"] == pytest.approx(2 * n / 128 / 1e9, abs=1e-3)
    assert figures["memory_gb_per_rank"]["zero1"]["gradients"] == pytest.approx(2 * n / 1e9, abs=1e-3)
    # 16 micro-batches per update, reduced once: each rank holds the unsharded bf16 parameters and fp32 gradients.
    assert zero3["accumulation"] == pytest.approx((2 + 4) * (n - n / 128) / 1e9, abs=1e-3) and none["accumulation"] == 0
    # the loss: one chunk of 2^28 // vocab rows' logits at 2 + 4 + 4 + 2 bytes, the kept gradients of the hidden
    # states (bf16) and of the tied weight (fp32 and bf16)
    vocab, width = model["vocab_size"], model["d_model"]
    loss = (2 ** 28 // vocab) * vocab * 12 + 2048 * 8 * width * 2 + vocab * width * 6
    # eager (no compile): 52 + 8 F bytes per element of a layer's input, F = 5632 / 2048, and 8 + 12 heads per row
    per_element = 52 + 8 * 5632 / 2048 + (8 + 12 * 16) / 2048
    assert PRESETS["1B"].ffn_dim == 5632 and model["n_heads"] == 16      # 8/3 of 2048, to a multiple of 256
    assert zero3["activations"] == pytest.approx(
        (model["n_layers"] * per_element * 2048 * 8 * 2048 + loss) / 1e9, abs=1e-3)
    assert figures["allreduce_seconds_per_update"] == pytest.approx(2 * 127 / 128 * 2 * n / 400e9, abs=1e-4)
    assert figures["checkpoint_gb"] == pytest.approx(12 * n / 1e9, abs=1e-3)
    compute = figures["total_flops"]
    assert figures["chinchilla_optimal_parameters"] == pytest.approx(math.sqrt(compute / 120), rel=1e-6)
    assert figures["expected_wall_hours"] == pytest.approx(compute / (989e12 * 128 * 0.4) / 3600, rel=1e-3)
    check_fits(figures)


def test_pipeline_bubble_and_a_run_that_does_not_fit():
    config = TrainingConfig.model_validate({"model": {"preset": "1B", "n_layers": 16, "tie_embeddings": False},
                                            "micro_batch_size": 96, "steps": 10,     # 12 x 8 sequences
                                            "hardware": {"device": "a100-40gb", "dtype": "bf16", "sharding": "none",
                                                         "pipeline_parallel": 4, "microbatches": 12}})
    figures = plan(config)
    assert figures["pipeline_bubble_fraction"] == pytest.approx(3 / 15)
    interleaved = config.hardware.model_copy(update={"pipeline_schedule": "interleaved_1f1b"})
    assert plan(config.model_copy(update={"hardware": interleaved}))["pipeline_bubble_fraction"] == \
        pytest.approx(3 / 27, abs=1e-4)
    zero_bubble = config.hardware.model_copy(update={"pipeline_schedule": "zero_bubble"})
    assert plan(config.model_copy(update={"hardware": zero_bubble}))["pipeline_bubble_fraction"] == \
        pytest.approx(3 / 75, abs=1e-4)
    assert figures["expected_wall_hours"] is not None
    with pytest.raises(PlanRefused, match="exceeds the device's 40 GB"):
        check_fits(figures)
    assert plan(config.model_copy(update={"hardware": config.hardware.model_copy(
        update={"device": "cpu", "dtype": "fp32"})}))["expected_wall_hours"] is None       # no peak for CPU


def test_plan_command_prints_and_refuses(tmp_path, capsys):
    from cli.main import main

    assert main(["plan", "configs/train_seed003.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens_per_update"] == 33_554_432
    too_big = tmp_path / "big.yaml"
    too_big.write_text("model: {preset: 1B}\nmicro_batch_size: 64\nsteps: 1\nhardware: {device: h100, dtype: bf16, "
                       "sharding: none}\n")
    assert main(["plan", str(too_big)]) == 3
    assert "refused: planned memory per rank" in capsys.readouterr().err
    with pytest.raises(ValueError, match="exactly one of"):
        TrainingConfig.model_validate({"steps": 1, "tokens": 5})


@pytest.mark.parametrize("compiled", [False, True])
def test_the_plans_activation_bytes_are_what_a_real_block_keeps_for_its_backward_pass(compiled):
    """The plan's per-layer count equals the bytes autograd saves for a real bf16 block (parameters and the rotary
    tables aside), eager and compiled, at two shapes: an edit to the block that keeps more fails here."""
    from training.model import Block, rotary_tables

    for config in (replace(PRESETS["tiny"], seq_len=128), replace(PRESETS["tiny"], d_model=96, n_heads=6)):
        torch._dynamo.reset()
        block = Block(config).to(torch.bfloat16)
        cos, sin = rotary_tables(config)
        skipped = {tensor.untyped_storage().data_ptr() for tensor in (*block.parameters(), cos, sin)}
        if compiled:
            block.compile()
        inputs = torch.randn(2, config.seq_len, config.d_model, dtype=torch.bfloat16, requires_grad=True)
        kept = {}

        def pack(tensor):
            if (storage := tensor.untyped_storage()).data_ptr() not in skipped:
                kept[storage.data_ptr()] = storage.nbytes()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            block(inputs, cos, sin)
        assert sum(kept.values()) / inputs.numel() == pytest.approx(layer_bytes_per_element(config, compiled))


def test_memory_per_rank_follows_the_layout():
    """State split over dp (FSDP), tp and pp, a pipeline's micro-batches accumulated; a pipeline rank's activations:
    its layers, for the micro-batches in flight (GPipe all m, 1F1B at most p, interleaved p + (p - 1) / v), each of
    micro_batch / m sequences, and one micro-batch's loss; sequence parallelism divides them by tp."""
    from configs.training import HardwareSpec
    from training.plan import activation_bytes, loss_bytes

    def figures(**hardware):
        return plan(TrainingConfig.model_validate({
            "model": {"preset": "124M", "tie_embeddings": False}, "micro_batch_size": 8, "steps": 1,
            "hardware": {"dtype": "fp32", **hardware}}))["memory_gb_per_rank"]["zero3"]

    n = plan(TrainingConfig.model_validate({"model": {"preset": "124M", "tie_embeddings": False},
                                            "micro_batch_size": 8, "steps": 1}))["parameters"]
    split = figures(pipeline_parallel=2, data_parallel=2, microbatches=8)
    assert split["optimizer"] == pytest.approx(8 * n / 4 / 1e9, abs=1e-3)
    # the pipeline's 8 micro-batches are accumulated: unsharded fp32 parameters and gradients held until the update
    assert split["accumulation"] == pytest.approx((4 + 4) * (n / 2 - n / 4) / 1e9, abs=1e-3)
    model = replace(PRESETS["tiny"], n_layers=8, tie_embeddings=False)
    layer = layer_bytes_per_element(model, False) * 2 * 64 * 64       # fp32, one sequence through one layer
    one_loss = sum(loss_bytes(model, 1, 2))                           # of one sequence: a pipeline micro-batch
    held = {schedule: activation_bytes(model, 8, "fp32", False, False, HardwareSpec(
        pipeline_parallel=4, microbatches=8, pipeline_schedule=schedule)) for schedule in ("gpipe", "1f1b",
                                                                                          "interleaved_1f1b")}
    assert held["gpipe"] == pytest.approx(2 * 8 * layer + one_loss)           # 2 layers x 8 micro-batches in flight
    assert held["1f1b"] == pytest.approx(2 * 4 * layer + one_loss)            # 4 in flight
    assert held["interleaved_1f1b"] == pytest.approx(2 * 5.5 * layer + one_loss)
    assert activation_bytes(model, 8, "fp32", False, False, HardwareSpec(data_parallel=2, tensor_parallel=2)) == \
        pytest.approx(activation_bytes(model, 8, "fp32", False, False) / 2)


def test_plan_takes_a_recipe_and_reports_a_bad_file_one_line_per_field(tmp_path, capsys):
    from cli.main import main

    assert main(["plan", "configs/demo.yaml", "--json"]) == 0         # the recipe's train section, as the flow sizes it
    figures = json.loads(capsys.readouterr().out)
    assert figures["model"]["vocab_size"] == 4000 and figures["steps"] == 20
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {preset: tiny, n_layerz: 2}\nmicro_batch_size: 0\n")
    assert main(["plan", str(bad)]) == 2
    printed = capsys.readouterr().err
    assert f"{bad}: invalid training file" in printed and "model.n_layerz: Extra inputs" in printed
    assert "micro_batch_size: Input should be greater than or equal to 1" in printed
    assert "pydantic" not in printed and "http" not in printed and len(printed.strip().splitlines()) == 3


def test_a_cpu_run_whose_ranks_exceed_this_machines_memory_is_refused():
    import psutil

    config = TrainingConfig.model_validate({"model": {"preset": "124M"}, "micro_batch_size": 4096, "steps": 1,
                                            "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 2}})
    figures = plan(config)
    assert figures["host_memory_gb"] == round(psutil.virtual_memory().total / 1e9, 1)
    assert figures["ranks_per_host"] == 2
    with pytest.raises(PlanRefused, match="x 2 ranks on one host = .* exceeds this machine's"):
        check_fits(figures)
    check_fits(plan(config.model_copy(update={"micro_batch_size": 1, "model": config.model.model_copy(
        update={"preset": "tiny"})})))

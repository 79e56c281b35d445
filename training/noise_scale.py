"""The gradient noise scale B_noise = tr(Sigma) / |G|^2 (McCandlish et al. 2018, appendix A), from two batch
sizes every step already has: the gradient after the first micro-batch (averaged over the data-parallel ranks:
B_small = micro batch x ranks) and the accumulated gradient of the update (B_big = micro batch x accumulation x
ranks). Unbiased estimates of |G|^2 and tr(Sigma) are smoothed separately (exponential moving averages) before
the ratio, as the paper recommends; B_noise, in sequences, seeds the critical batch size."""
from __future__ import annotations


def unbiased_estimates(small_sq: float, big_sq: float, b_small: int, b_big: int) -> tuple[float, float]:
    """(|G|^2, tr Sigma) from the squared gradient norms measured at batch sizes b_small < b_big."""
    gradient_sq = (b_big * big_sq - b_small * small_sq) / (b_big - b_small)
    trace = (small_sq - big_sq) / (1.0 / b_small - 1.0 / b_big)
    return gradient_sq, trace


class NoiseScale:
    def __init__(self, b_small: int, smoothing: float = 0.95):
        self.b_small, self.smoothing = b_small, smoothing
        self.gradient_sq = self.trace = None

    def update(self, small_sq: float, big_sq: float, b_big: int) -> float | None:
        """Add one step's measurements; returns the smoothed B_noise (None while |G|^2 is not positive)."""
        gradient_sq, trace = unbiased_estimates(small_sq, big_sq, self.b_small, b_big)
        if self.gradient_sq is None:
            self.gradient_sq, self.trace = gradient_sq, trace
        else:
            keep = self.smoothing
            self.gradient_sq = keep * self.gradient_sq + (1 - keep) * gradient_sq
            self.trace = keep * self.trace + (1 - keep) * trace
        return self.trace / self.gradient_sq if self.gradient_sq > 0 else None

    def state_dict(self) -> dict:
        return {"gradient_sq": self.gradient_sq, "trace": self.trace}

    def load_state_dict(self, state: dict) -> None:
        self.gradient_sq, self.trace = state["gradient_sq"], state["trace"]


class NoiseProbe:
    """The trainer's side of the noise scale: the gradient norm after the first micro-batch (taken before the rest
    accumulate onto it), then the update's clipped-before norm. Only updates with gradient accumulation (two batch
    sizes) measure; the accumulation may change between updates (a batch ramp)."""

    def __init__(self, micro_sequences: int, full_accumulation: int):
        self.scale = NoiseScale(micro_sequences)
        self.micro_sequences, self.sequences = micro_sequences, micro_sequences * full_accumulation
        self.first_sq: float | None = None

    @staticmethod
    def measures(index: int, accumulation: int) -> bool:
        """Whether the probe reads the gradient after micro-batch `index`: the first of an accumulated update."""
        return index == 0 and accumulation > 1

    def after_first_micro_batch(self, model, accumulation: int, loss_scale: float = 1.0, stages=None) -> None:
        """The ranks' reduced gradient of the first micro-batch (accumulated gradients are sums / accumulation: back
        to the mean); `stages`: the pipeline's ranks, whose stages' gradients make the whole."""
        from training.parallel import gradient_norm

        norm = float(gradient_norm(model.parameters(), stages))
        self.first_sq = (norm * accumulation / loss_scale) ** 2  # fp16: scaled

    def after_update(self, total_norm: float, accumulation: int) -> float | None:
        if accumulation < 2:
            return self.b_noise()
        return self.scale.update(self.first_sq, total_norm ** 2, self.micro_sequences * accumulation)

    def b_noise(self) -> float | None:
        """The smoothed B_noise in sequences, once there is a measurement."""
        return self.scale.trace / self.scale.gradient_sq if self.scale.gradient_sq else None

    def state_dict(self) -> dict:
        return self.scale.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scale.load_state_dict(state)

"""Loss-spike detection (as OLMo-core): a loss above the rolling mean + k standard deviations of the last
accepted losses is a spike. The trainer skips the update of a spike; after `max_consecutive` spikes in a row it
rolls back to the last good checkpoint and goes on with the next batches, so the offending ones are skipped
(PaLM's recipe)."""
from __future__ import annotations

import statistics
from collections import deque

from configs.training import SpikeSpec


class SpikeDetector:
    def __init__(self, spec: SpikeSpec):
        self.spec = spec
        self.history: deque[float] = deque(maxlen=spec.window)
        self.consecutive = 0

    def is_spike(self, loss: float) -> bool:
        if len(self.history) < self.spec.min_history:
            return False
        mean, spread = statistics.fmean(self.history), statistics.pstdev(self.history)
        return loss > mean + self.spec.sigmas * max(spread, self.spec.min_std)

    def record(self, loss: float, spike: bool) -> bool:
        """Count the outcome; True when the spikes in a row call for a rollback."""
        if spike:
            self.consecutive += 1
            return self.consecutive >= self.spec.max_consecutive
        self.history.append(loss)
        self.consecutive = 0
        return False

    def rolled_back(self) -> None:
        """The trainer went back to a checkpoint: the spikes in a row are dealt with."""
        self.consecutive = 0

    def state_dict(self) -> dict:
        return {"history": list(self.history), "consecutive": self.consecutive}

    def load_state_dict(self, state: dict) -> None:
        self.history = deque(state["history"], maxlen=self.spec.window)
        self.consecutive = state["consecutive"]

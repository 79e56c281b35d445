"""The names of the metrics the trainer logs for its events, which `sluice doctor` (training/doctor.py) reads back:
a skipped spike's loss, a rollback's step, a resume's step, and fp16's loss scale and skipped steps."""
from __future__ import annotations

SPIKE_METRIC, ROLLBACK_METRIC, RESUME_METRIC = "spike_loss", "rollback_to", "resumed_at"
SCALE_METRIC, SKIPPED_METRIC = "loss_scale", "skipped_steps"      # fp16 (training.loss_scale)

"""Prefect flows: composition and parameters (the `sluice` command is cli/). The data logic lives in `tasks/`."""
from flows.environment import apply_quiet_defaults

apply_quiet_defaults()

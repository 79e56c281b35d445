"""Prefect flows: composition, parameters and the `sluice` command. The data logic lives in `tasks/`."""
from flows.environment import apply_quiet_defaults

apply_quiet_defaults()

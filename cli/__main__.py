"""`python -m cli ...`: the `sluice` command without its console script."""
import sys

from cli.main import run

if __name__ == "__main__":     # Dask's spawned workers import this module again, as __mp_main__
    sys.exit(run())

"""A Prefect database with every migration applied, made once a test session in the background: the tests that start
a Prefect server of their own (`sluice server`, `sluice run` with a PREFECT_HOME of its own) start it on a copy, and
so skip the ~15 s of migrations a fresh database runs on 2 cores. Made by Prefect's own command, untouched after."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


class MigratedPrefectDatabase:
    def __init__(self, folder: Path):
        self.folder = folder
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Begin the migrations: the suite's first tests are mostly single-threaded, so the second core is free."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen([sys.executable, "-m", "prefect", "server", "database", "upgrade", "-y"],
                                        env=os.environ | {"PREFECT_HOME": str(self.folder)},
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def copy_to(self, prefect_home: Path) -> None:
        """The migrated database as `prefect_home`'s, which must not have one yet."""
        if self.process is None:
            self.start()
        output, _ = self.process.communicate(timeout=300)
        assert self.process.returncode == 0, f"prefect server database upgrade failed:\n{output}"
        prefect_home.mkdir(parents=True, exist_ok=True)
        assert not (prefect_home / "prefect.db").exists(), prefect_home
        shutil.copyfile(self.folder / "prefect.db", prefect_home / "prefect.db")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

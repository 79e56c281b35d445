"""What a stage adds to its standard report for people (markdown, tables, chart files), kept beside its output so
a cached rerun shows it again. Not part of any stage's fingerprint (storage.code_version.ORCHESTRATION)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

REPORT_FILE = "report.json"


@dataclass
class StageReport:
    markdown: str = ""
    tables: dict[str, list[dict]] = field(default_factory=dict)   # name -> rows
    files: list[str] = field(default_factory=list)                 # local paths, logged to MLflow

    @staticmethod
    def folder_of(stage_dir: str, create: bool = False) -> str:
        """Where a stage's report lives: `<stage_dir>/report` (a local directory)."""
        folder = f"{stage_dir}/report"
        if create:
            os.makedirs(folder, exist_ok=True)
        return folder

    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, REPORT_FILE), "w") as handle:
            json.dump({"markdown": self.markdown, "tables": self.tables,
                       "files": [os.path.relpath(path, folder) for path in self.files]}, handle, indent=2)

    @classmethod
    def load(cls, folder: str) -> "StageReport":
        path = os.path.join(folder, REPORT_FILE)
        if not os.path.isfile(path):
            return cls()
        with open(path) as handle:
            raw = json.load(handle)
        return cls(raw["markdown"], raw["tables"], [os.path.join(folder, name) for name in raw["files"]
                                                     if os.path.isfile(os.path.join(folder, name))])

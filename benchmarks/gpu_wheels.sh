#!/usr/bin/env bash
# The wheels benchmarks/gpu_check.py needs on a GPU machine whose image lacks them (Python 3.12, manylinux
# x86_64): pydantic and what it needs, at the versions this project's venv runs. Run here, in the repository root,
# before the device call; carry `.whl` (gitignored, about 2.5 MB). Everything else the trainer imports (torch,
# numpy, PyYAML, fsspec, psutil) is in the image.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing_extensions==4.16.0
ls -la .whl

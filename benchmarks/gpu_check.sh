#!/usr/bin/env bash
# The GPU check as one device command (benchmarks/README.md, "The trainer on a GPU"): installs the carried wheels
# (`.whl`, fetched here by benchmarks/gpu_wheels.sh) where the image lacks them, then runs benchmarks/gpu_check.py,
# writing into $OUT (the device tool's folder) or ./gpu-check.
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
export PYTHONUNBUFFERED=1
python3 benchmarks/gpu_check.py --out "${OUT:-gpu-check}" "$@"

#!/usr/bin/env bash
# The peer (datatrove) in its own venv: datatrove 0.10.1 pins trafilatura 1.x, which must not reach the
# project venv. Idempotent: a stamp keyed on this script's content skips the install on the next run.
#
#   bash benchmarks/setup_peer.sh        -> benchmarks/_work/venv-peer/bin/python
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/_work/venv-peer"
stamp="$venv/.sluice-peer-stamp"
want="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
    echo "peer venv up to date: $venv"
    exit 0
fi

python="${PEER_PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3
mkdir -p "$here/_work"
find_links=()
if [[ -n "${PIP_FIND_LINKS:-}" ]]; then find_links=(--find-links "$PIP_FIND_LINKS"); fi

if python3 -m uv --version >/dev/null 2>&1; then
    python3 -m uv venv --python "$python" "$venv"
    python3 -m uv pip install --python "$venv/bin/python" "${find_links[@]}" \
        "datatrove[io,processing]==0.10.1" "fasttext-numpy2-wheel" spacy
else
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "${find_links[@]}" \
        "datatrove[io,processing]==0.10.1" "fasttext-numpy2-wheel" spacy
fi
# datatrove imports `fasttext` (the numpy-2 wheel provides it) and its MinHash word tokenizer needs spacy. Fail now, not in the benchmark.
"$venv/bin/python" -c "import datatrove, fasttext, trafilatura, spacy; print('datatrove', datatrove.__version__ if hasattr(datatrove, '__version__') else '0.10.1', 'trafilatura', trafilatura.__version__)"
echo "$want" > "$stamp"
echo "peer venv ready: $venv"

#!/usr/bin/env bash
# KenLM's lmplz and build_binary are not packaged by Debian or PyPI: compile them once from the kenlm source
# distribution (the same release the `kenlm` Python module is built from) into the venv's bin/, where the
# quality stage looks first. Needs cmake, g++ and Boost (program_options, system, thread) from apt.
#
#   bash .ci/build_kenlm.sh .venv      (idempotent: does nothing when both programs are there)
set -euo pipefail
venv="$(cd "$1" && pwd)"
version=0.3.0
sha256=c4628bb9fb63c8a6f9240035b8b037385cfc404cb72e933cf48878291edac1e8
url="https://files.pythonhosted.org/packages/02/6e/f4e159cef39ea4ef2244b4aa32857d447d60a5d0ee269e1b1f8d3723c03e/kenlm-${version}.tar.gz"

if [ -x "$venv/bin/lmplz" ] && [ -x "$venv/bin/build_binary" ]; then
  exit 0
fi
if [ ! -f /usr/include/boost/program_options.hpp ] || ! command -v cmake >/dev/null; then
  echo "[kenlm] installing cmake and Boost from apt"
  bash "$(dirname "$0")/apt_install.sh" cmake libboost-program-options-dev libboost-system-dev \
    libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "[kenlm] building lmplz and build_binary from kenlm-${version}.tar.gz"
curl -sSfL "$url" -o "$work/kenlm.tar.gz"
echo "$sha256  $work/kenlm.tar.gz" | sha256sum -c --quiet
tar xzf "$work/kenlm.tar.gz" -C "$work"
cmake -S "$work/kenlm-${version}" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 >/dev/null
cmake --build "$work/build" --target lmplz build_binary -j "$(nproc)" >/dev/null
install -m 755 "$work/build/bin/lmplz" "$work/build/bin/build_binary" "$venv/bin/"
echo "[kenlm] installed $venv/bin/lmplz and $venv/bin/build_binary"

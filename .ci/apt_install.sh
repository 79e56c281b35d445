#!/usr/bin/env bash
# apt-get install the named Debian packages (as root, or through sudo), refreshing the package lists once if the
# first try fails (a fresh image may have none).
#
#   bash .ci/apt_install.sh cmake libboost-system-dev ...
set -euo pipefail
sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null \
  || { "${sudo_cmd[@]}" apt-get update -qq >/dev/null && "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null; }

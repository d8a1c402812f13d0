#!/usr/bin/env bash
# Installs gridflow's build dependencies from the distribution when any is missing (Debian/Ubuntu, as root).
# Quiet when everything is present (the GPU machine has no network and needs nothing).
set -euo pipefail
pkgs=(cmake ninja-build g++ libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "gridflow: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

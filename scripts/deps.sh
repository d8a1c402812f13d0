#!/usr/bin/env bash
# Sourced by scripts/build.sh: makes sure gridflow's build dependencies are present, by looking for what the build
# uses (tools on PATH at a usable version, headers and libraries the compiler finds), not for distribution packages,
# so a machine that has them from elsewhere (a CUDA image, pip, /usr/local) needs nothing and apt is never called.
# Installs only what is really missing, through apt (Debian/Ubuntu; as root or with sudo); when apt cannot help (no
# network, no apt) it names what it could not install and leaves the last word to CMake.
set -euo pipefail
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

# version_at_least A B: whether version A >= version B (dotted numbers).
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# compiles: whether the C++ compiler builds and links a program from the given source and flags.
compiles() {
  local src=$1
  shift
  printf '%s\n' "$src" | "${CXX:-g++}" -std=c++20 -x c++ - -o /dev/null "$@" >/dev/null 2>&1
}

missing=()
need() { missing+=("$1"); }

command -v "${CXX:-g++}" >/dev/null 2>&1 || need g++
if ! command -v cmake >/dev/null 2>&1 || ! version_at_least "$(cmake --version | head -1 | awk '{print $3}')" 3.24; then
  need cmake
fi
command -v ninja >/dev/null 2>&1 || need ninja-build
if command -v "${CXX:-g++}" >/dev/null 2>&1; then
  compiles '#include <spdlog/spdlog.h>
int main() { spdlog::info("x"); }' -lfmt || need libspdlog-dev
  compiles '#include <fmt/format.h>
int main() { return static_cast<int>(fmt::format("{}", 1).size()) - 1; }' -lfmt || need libfmt-dev
  compiles '#include <nlohmann/json.hpp>
int main() { return nlohmann::json::parse("1").get<int>() - 1; }' || need nlohmann-json3-dev
  compiles '#include <CLI/CLI.hpp>
int main() { CLI::App app; return 0; }' || need libcli11-dev
  compiles '#include <gtest/gtest.h>
int main(int c, char** v) { testing::InitGoogleTest(&c, v); return 0; }' -lgtest -pthread || need libgtest-dev
fi

# The Python package is built when Python's headers and nanobind are found (CMake's GRIDFLOW_BUILD_PYTHON=AUTO) and
# tested when pytest and numpy are: pip installs what is missing where pip may (not into an externally managed
# system Python); without them the C++ build and tests go on alone.
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import nanobind, numpy, pytest" >/dev/null 2>&1; then
  echo "gridflow: installing nanobind, scikit-build-core, numpy and pytest for $(python3 --version 2>&1) (pip)" >&2
  python3 -m pip install --quiet nanobind scikit-build-core numpy pytest >/dev/null 2>&1 ||
    echo "gridflow: pip could not install them: the Python package is not built" >&2
fi

if ((${#missing[@]})); then
  echo "gridflow: missing ${missing[*]}; installing through apt" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! command -v apt-get >/dev/null 2>&1 || ! $SUDO apt-get update -qq ||
     ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    # Found by neither the probe nor apt: CMake may still find them where the probe did not look, and says what it
    # cannot find.
    echo "gridflow: could not install ${missing[*]} (no apt, or no network); trying the build anyway" >&2
  fi
fi

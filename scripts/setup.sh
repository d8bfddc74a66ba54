#!/usr/bin/env bash
# Installs gpuprof's build and test dependencies (Debian packages only) when
# any is missing, then builds. Safe to run again: it does nothing it need not.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential clang llvm libclang-rt-14-dev bpftool pkg-config
  libbpf-dev libelf-dev zlib1g-dev libzstd-dev libcapstone-dev
  libcli11-dev libgtest-dev libgmock-dev systemtap-sdt-dev nlohmann-json3-dev
  python3-torch python3-torchvision python3-pytest tmux libcap2-bin strace
  chromium golang-go libcurl4-openssl-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing Debian packages: ${missing[*]}; run as root (sudo) to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# speedscope + playwright-core for tests/viewer/load_in_speedscope.mjs (the
# browser is the chromium package above), pprof-format for
# tests/viewer/decode_pprof.mjs (golang-go above gives `go tool pprof`). npm ci only when the lock file changed.
if ! command -v npm >/dev/null; then
  echo "setup: npm not found (needs Node.js >= 20): the viewer tests (tests/viewer) will fail" >&2
elif [[ ! tests/viewer/node_modules/.package-lock.json -nt tests/viewer/package-lock.json ]]; then
  echo "setup: installing tests/viewer npm packages"
  npm ci --prefix tests/viewer --no-audit --no-fund --loglevel=error
fi

make -j"$(nproc)" all build/gpuprof_unit_tests
# The fuzz targets (docs/fuzzing.md): clang, ASan, UBSan, libFuzzer.
make -j"$(nproc)" fuzz

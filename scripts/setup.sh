#!/usr/bin/env bash
# Installs everything byoc needs on a fresh Debian/Ubuntu machine: the C toolchains (host and
# cross, run under qemu-user), DLPack's header, Graphviz, and the Python package with its test extras.
# Safe to run again: apt and pip skip what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang's sanitizer and libFuzzer runtimes (libclang-rt-dev) are only a Recommends of clang, and
# recommends are not installed here: name them.
APT_PACKAGES=(
  gcc clang libclang-rt-dev make libdlpack-dev graphviz
  libdnnl-dev
  qemu-user
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
  gcc-s390x-linux-gnu libc6-dev-s390x-cross
  gcc-arm-none-eabi libnewlib-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
echo "setup: done"

#!/usr/bin/env bash
# Installs every Debian 12 package tapdiff needs to build, test and run (Vulkan on Mesa lavapipe
# where no GPU is present). Safe to run again: apt-get skips what is already installed.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git ccache clang-format
  libeigen3-dev libhdf5-dev hdf5-tools libcli11-dev libfmt-dev libtomlplusplus-dev nlohmann-json3-dev libssl-dev zlib1g-dev
  libvulkan-dev glslang-tools glslang-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libgtest-dev libgmock-dev python3 python3-venv python3-h5py python3-numpy nodejs
  clang libclang-rt-14-dev libomp-14-dev  # the fuzz build (scripts/fuzz.sh): clang, libFuzzer, clang's OpenMP
)
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with NodeSource's nodejs; Debian's own nodejs needs its npm package.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

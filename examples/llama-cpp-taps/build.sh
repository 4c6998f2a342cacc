#!/usr/bin/env bash
# Builds llama_cpp_taps and prints its path.
#   build.sh OUT [cpu|vulkan]             against npm's node-llama-cpp (scripts/node-peers.sh): its
#                                         prebuilt libraries of the CPU build (the default) or of its
#                                         Vulkan build (@node-llama-cpp/linux-x64-vulkan, whose
#                                         folder also holds ggml's Vulkan backend), and the headers of
#                                         the same llama.cpp release taken from the source bundle it
#                                         ships
#   build.sh OUT LLAMA_CPP_DIR LIB_DIR    against your own llama.cpp: its source tree (for the
#                                         headers) and the folder holding libllama and libggml*
# Needs a C compiler (cc) and, for the first form, git.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT [cpu|vulkan] | build.sh OUT LLAMA_CPP_DIR LIB_DIR}
if [ $# -ge 3 ]; then
  source_dir=$2
  lib_dir=$3
else
  peers=$("$here/../../scripts/node-peers.sh")
  package=$peers/node_modules/node-llama-cpp
  case ${2:-cpu} in
    cpu) build=linux-x64 ;;
    vulkan) build=linux-x64-vulkan ;;
    *) echo "build.sh: expected cpu or vulkan, found '$2'" >&2; exit 1 ;;
  esac
  lib_dir=$peers/node_modules/@node-llama-cpp/$build/bins/$build
  release=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$package/llama/llama.cpp.info.json")
  source_dir=$peers/llama.cpp-headers-$release
  if [ ! -f "$source_dir/.complete" ]; then
    rm -rf "$source_dir" "$source_dir.git"
    git clone --quiet --bare "$package/llama/gitRelease.bundle" "$source_dir.git"
    mkdir -p "$source_dir"
    git --git-dir="$source_dir.git" archive HEAD include ggml/include | tar -x -C "$source_dir"
    rm -rf "$source_dir.git"
    touch "$source_dir/.complete"
  fi
fi
libs=()
for name in libllama libggml libggml-base; do
  lib=$(ls "$lib_dir"/$name.so "$lib_dir"/$name.v*.so 2>/dev/null | head -n1 || true)
  [ -n "$lib" ] || { echo "build.sh: no $name*.so in $lib_dir" >&2; exit 1; }
  libs+=("$lib")
done
cc -O2 -std=c11 -Wall -Wextra -I "$source_dir/include" -I "$source_dir/ggml/include" "$here/llama_cpp_taps.c" \
  -o "$out" "${libs[@]}" -Wl,-rpath,"$lib_dir"
echo "$out"

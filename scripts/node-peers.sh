#!/usr/bin/env bash
# Installs (once) llama.cpp's prebuilt CPU binaries through npm's node-llama-cpp into a cached
# folder and prints it; the conformance suite runs llama.cpp from there. About 700 MB on first
# install. TAPDIFF_NODE_PEERS_ROOT overrides ~/.cache/tapdiff/node.
set -euo pipefail
version=3.22.1
root=${TAPDIFF_NODE_PEERS_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tapdiff/node}
dir=$root/node-llama-cpp-$version
if [ ! -f "$dir/.complete" ]; then
  command -v npm >/dev/null || { echo "node-peers: npm is not installed" >&2; exit 1; }
  echo "node-peers: installing node-llama-cpp $version into $dir (about 700 MB)" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"name": "tapdiff-node-peers", "private": true}' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --silent "node-llama-cpp@$version" >&2)
  touch "$dir/.complete"
fi
echo "$dir"

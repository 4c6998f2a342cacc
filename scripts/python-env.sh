#!/usr/bin/env bash
# Creates (once) the cached Python virtual environment with the conformance suites' peers
# (python/requirements-conformance.txt: torch, transformers, safetensors, tokenizers, gguf, h5py,
# pytest) and the project's package python/tapdiff, and prints its folder. The folder is keyed by the requirements' hash, so a changed list
# makes a new one; a finished environment is reused as it is. The first run downloads about 4 GB
# (torch from PyPI and its CUDA libraries). TAPDIFF_PYTHON_ENV_ROOT overrides ~/.cache/tapdiff/python.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=python/requirements-conformance.txt
key=$(sha256sum "$requirements" | cut -c1-16)
root=${TAPDIFF_PYTHON_ENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tapdiff/python}
env_dir=$root/env-$key
if [ ! -f "$env_dir/.complete" ]; then
  echo "python-env: creating $env_dir (first run: downloads about 4 GB from PyPI)" >&2
  rm -rf "$env_dir"
  mkdir -p "$root"
  python3 -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install --quiet --upgrade pip >&2
  "$env_dir/bin/python" -m pip install --quiet -r "$requirements" >&2
  touch "$env_dir/.complete"
fi
# The project's own package (python/: the dump writer), installed afresh each time: it changes.
"$env_dir/bin/python" -m pip install --quiet --no-deps ./python >&2
echo "$env_dir"

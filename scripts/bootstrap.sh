#!/usr/bin/env bash
# Create .venv (if needed) and install the project with the CPU build of torch.
# Sourced by scripts/demo and scripts/test and by people (`source scripts/bootstrap.sh`); safe to
# run again (it reinstalls only on change). The install runs in a subshell with its own strict
# options, so a sourcing shell keeps its own (`set -e` left behind would close an interactive
# terminal at the next failing command) and a failed install returns instead of exiting; only the
# environment variables below reach the caller.
_memory_pipeline_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_memory_pipeline_install() (
set -euo pipefail
cd "$_memory_pipeline_root"

PYTHON="${PYTHON:-python3}"
VENV="${MEMORY_PIPELINE_VENV:-.venv}"
# The CPU build of torch. Here `torch==2.13.0` resolves to a local CPU wheel; elsewhere set
# MEMORY_PIPELINE_TORCH to a CPU requirement, e.g. "torch --index-url <PyTorch's CPU wheel index>".
TORCH_SPEC="${MEMORY_PIPELINE_TORCH:-torch==2.13.0}"

"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memory_pipeline needs Python 3.11 or newer")'
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating virtual environment in $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

stamp="$VENV/.memory_pipeline-installed"
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1) $TORCH_SPEC"
log="$VENV/install.log"
pip_install() {
  # pip's chatter goes to a log; on failure its tail is shown.
  if ! "$PY" -m pip install --quiet --disable-pip-version-check "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "pip install $* failed; full log in $log" >&2
    exit 1
  fi
}
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing memory_pipeline and its dependencies into $VENV (log: $log)" >&2
  : >"$log"
  pip_install --upgrade pip
  # torch first, so nothing later can pull a multi-GB CUDA build.
  pip_install $TORCH_SPEC
  pip_install -e ".[test,bench]"
  # Recall's query encoder is exported to ONNX here, once, so no query waits for it.
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PY" -m memory_pipeline.embedding >>"$log" 2>&1 \
    || echo "the ONNX query encoder was not exported (log: $log); the first query exports it" >&2
  echo "$want" > "$stamp"
fi
)

# Called as a plain command, not an `if` test: bash ignores `set -e` inside a condition.
_memory_pipeline_install
_memory_pipeline_status=$?
if [ "$_memory_pipeline_status" -eq 0 ]; then
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
  _memory_pipeline_venv="${MEMORY_PIPELINE_VENV:-.venv}"
  case "$_memory_pipeline_venv" in /*) ;; *) _memory_pipeline_venv="$_memory_pipeline_root/$_memory_pipeline_venv" ;; esac
  export PATH="$_memory_pipeline_venv/bin:$PATH"
  unset -f _memory_pipeline_install
  unset _memory_pipeline_root _memory_pipeline_venv _memory_pipeline_status
else
  unset -f _memory_pipeline_install
  unset _memory_pipeline_root _memory_pipeline_status
  # Sourced: return to the caller's shell; run as a script: exit.
  return 1 2>/dev/null || exit 1
fi

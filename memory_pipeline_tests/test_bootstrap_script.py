"""scripts/bootstrap.sh sourced into a person's shell.

Proves: sourcing it leaves the caller's shell options as they were (no `set -euo pipefail` left
behind to close an interactive terminal at the next failing command), a failed install returns
1 to the shell instead of exiting it, and a good one puts the virtual environment on PATH. The
install itself never runs: the virtual environment is a temporary folder whose stamp says it is
up to date.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from memory_pipeline_tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bootstrap.sh"
PROBE = 'source scripts/bootstrap.sh; echo "rc=$? opts=${-//[^eu]/} $(set -o | grep pipefail | tr -s " \\t" " ")"; echo alive'


def _source(env: dict) -> list[str]:
    out = subprocess.run(["bash", "-c", PROBE], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    return out.stdout.splitlines()


def test_a_failed_install_returns_and_the_shell_keeps_its_options(tmp_path):
    lines = _source({"PYTHON": "false", "MEMORY_PIPELINE_VENV": str(tmp_path / "venv")})
    assert lines == ["rc=1 opts= pipefail off", "alive"]
    assert not (tmp_path / "venv").exists()


def test_an_installed_environment_goes_on_path_and_the_options_stay(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    # A python that refuses `-m pip`: were the stamp not taken as up to date, nothing would be installed.
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\n[ "$1" = "-m" ] && exit 3\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    spec = "torch==2.13.0"
    digest = hashlib.sha256((REPO / "pyproject.toml").read_bytes() + SCRIPT.read_bytes()).hexdigest()
    (venv / ".memory_pipeline-installed").write_text(f"{digest} {spec}\n")
    env = {"PYTHON": sys.executable, "MEMORY_PIPELINE_VENV": str(venv), "MEMORY_PIPELINE_TORCH": spec}
    assert _source(env) == ["rc=0 opts= pipefail off", "alive"]
    path = subprocess.run(["bash", "-c", "source scripts/bootstrap.sh; echo $PATH; echo $HF_HUB_OFFLINE"], cwd=REPO,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert path[0].split(":")[0] == f"{venv}/bin" and path[1] == "1"

"""The real ``mycelium`` command, run as a person runs it: the script installed beside this interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MYCELIUM = str(Path(sys.executable).with_name("mycelium"))
"""The ``mycelium`` script of the environment the tests run in."""


def command_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment a person's shell gives it: no token of ours, no colour, the app's data under ``data_dir``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MYCELIUM_") and key != "FORCE_COLOR"}
    env.update({"MYCELIUM_DATA_DIR": str(data_dir), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **extra})
    return env


def mycelium(*args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``mycelium ARGS...`` in ``cwd`` to its end, its data in ``cwd/.data`` and ``env`` added to
    the environment: what it printed, and its exit code."""
    return subprocess.run(
        [MYCELIUM, *args],
        cwd=cwd,
        env=command_env(cwd / ".data", **env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

"""`mycelium init`: a small app that check, exec and its own test accept at once, and nothing overwritten."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from mycelium.cli import cli


def test_init_writes_an_app_that_check_and_exec_accept_and_whose_test_passes(tmp_path: Path) -> None:
    folder = tmp_path / "todo"
    runner = CliRunner(env={"MYCELIUM_DATA_DIR": str(tmp_path / "data")})
    made = runner.invoke(cli, ["init", str(folder)])
    checked = runner.invoke(cli, ["check", str(folder / "app.py")])
    added = runner.invoke(cli, ["exec", str(folder / "app.py"), "-c", 'return await tasks.add(title="milk")'])
    listed = runner.invoke(cli, ["exec", str(folder / "app.py"), "-c", "return await tasks.open_tasks()"])
    assert made.exit_code == 0, made.stderr
    assert "mycelium serve app.py" in made.stdout
    assert checked.exit_code == 0
    assert checked.stdout.strip() == "0 errors, 0 warnings"
    assert json.loads(listed.stdout) == [json.loads(added.stdout)]  # kept in SQLite between runs
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_init_refuses_a_folder_that_already_holds_the_app_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("mine = 1\n")
    refused = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert refused.exit_code == 2
    assert "already exists" in refused.stderr
    assert (tmp_path / "app.py").read_text() == "mine = 1\n"
    assert not (tmp_path / "test_app.py").exists()

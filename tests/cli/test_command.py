"""The `mycelium` command itself: `--version`, and a `--help` whose list of verbs is read whole."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import typer

from mycelium.cli import cli
from tests.support.command import mycelium


def test_version_prints_the_installed_distributions_version_and_exits_0(tmp_path: Path) -> None:
    shown = mycelium("--version", cwd=tmp_path)
    assert shown.returncode == 0
    assert shown.stdout == f"mycelium-codemode {importlib.metadata.version('mycelium-codemode')}\n"


@pytest.mark.parametrize("columns", ["80", "60"])
def test_the_root_help_shows_each_verbs_summary_whole_never_cut_with_dots(tmp_path: Path, columns: str) -> None:
    shown = mycelium("--help", cwd=tmp_path, COLUMNS=columns)
    assert shown.returncode == 0
    listing = shown.stdout.split("Commands:\n", 1)[1]
    summaries: dict[str, str] = {}
    for line in listing.splitlines():
        verb, _, text = line.strip().partition(" ")
        if line.startswith("  ") and not line.startswith("   "):  # a verb's first line; deeper ones continue it
            summaries[verb] = text.strip()
        elif line.strip():
            summaries[list(summaries)[-1]] += " " + line.strip()
    verbs = typer.main.get_group(cli).commands
    assert list(summaries) == ["serve", "exec", "describe", "search", "check", "init"]
    for verb, summary in summaries.items():
        assert not summary.endswith("..."), summary
        assert summary == verbs[verb].short_help

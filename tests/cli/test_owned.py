"""APP may be a plain Module, a list of modules or a Runtime (or a factory of one): served to its owner alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._apps import load_catalog
from mycelium.cli._owned import LOCAL_PRINCIPAL
from mycelium.mcp import Member

APP = '''
from mycelium import Module, Runtime
from mycelium.sandbox.monty import MontySandbox

todo = Module(id="todo-v1", name="todo", description="A to-do list")
tags = Module(id="tags-v1", name="tags", description="Tags")


@todo.operation(access="write")
async def add(title: str) -> str:
    """Add a task."""
    return title


@tags.operation(access="read")
async def count() -> int:
    """How many tags there are."""
    return 3


both = [todo, tags]


def runtime() -> Runtime:
    return Runtime(modules=[todo, tags], sandbox=MontySandbox())
'''
PROGRAM = 'return [await todo.add(title="milk"), await tags.count()]'


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "owned_app.py"
    path.write_text(APP)
    return path


@pytest.mark.parametrize("attribute", ["both", "runtime"])
def test_a_list_of_modules_or_a_runtime_factory_is_an_app_every_local_verb_runs(app: Path, attribute: str) -> None:
    runner = CliRunner()
    ran = runner.invoke(cli, ["exec", f"{app}:{attribute}", "-c", PROGRAM])
    described = runner.invoke(cli, ["describe", f"{app}:{attribute}", "todo.add"])
    found = runner.invoke(cli, ["search", f"{app}:{attribute}", "add a task"])
    checked = runner.invoke(cli, ["check", f"{app}:{attribute}"])
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout) == ["milk", 3]
    assert "async def add(*, title: str)" in described.stdout
    assert found.stdout.startswith("todo.add")
    assert checked.exit_code == 0, checked.stdout


def test_a_single_module_is_an_app_with_write_access_for_its_owner(app: Path) -> None:
    ran = CliRunner().invoke(cli, ["exec", f"{app}:todo", "-c", 'return await todo.add(title="milk")'])
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout) == "milk"


async def test_a_module_served_as_an_app_grants_nothing_to_anyone_but_its_owner(app: Path) -> None:
    catalog = await load_catalog(f"{app}:todo")
    async with catalog:
        owner = await catalog.refresh(LOCAL_PRINCIPAL)
        stranger = await catalog.refresh(Member("local", "someone-else"))
    assert owner.grants == {"todo-v1": "write"}
    assert stranger.grants == {}
    assert stranger.sources == ()


def test_a_runtime_with_capability_sources_is_refused_with_what_to_do_instead(tmp_path: Path) -> None:
    path = tmp_path / "sourced_app.py"
    path.write_text(
        "from mycelium import Acquired, Runtime, source\n"
        "from mycelium.sandbox.monty import MontySandbox\n"
        "async def acquire(context):\n"
        "    return Acquired(modules=[])\n"
        "runtime = Runtime(sources=[source(id='s', acquire=acquire)], sandbox=MontySandbox())\n"
    )
    ran = CliRunner().invoke(cli, ["check", f"{path}:runtime"])
    assert ran.exit_code == 2
    assert "create_mcp_catalog" in ran.stderr

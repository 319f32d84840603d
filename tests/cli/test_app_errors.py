"""An app that raises while it loads is told as the place in the app to fix: its file, line, the line's text and a
caret, the exception's type and message, and nothing of the import machinery or of Mycelium."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mycelium.cli import cli
from tests.support.command import mycelium


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder, as the current one; the modules an app leaves imported are forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def refusal(folder: Path, app: str, **files: str) -> list[str]:
    """What `mycelium check APP` says on stderr, line by line, after it refused with exit code 2."""
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    result = CliRunner().invoke(cli, ["check", app])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    for machinery in ("<frozen", "importlib", "Traceback", str(Path(sys.modules["mycelium"].__file__).parent)):
        assert machinery not in result.stderr
    return result.stderr.splitlines()


def test_a_syntax_error_shows_the_apps_file_line_text_and_a_caret_under_the_column(folder: Path) -> None:
    shown = refusal(folder, "typo.py", typo="from mycelium import Module\n\ndef create_catalog(:\n    pass\n")
    assert shown == [
        "Error: loading typo.py raised SyntaxError: invalid syntax",
        '  File "typo.py", line 3',
        "    def create_catalog(:",
        "                       ^",
    ]


def test_an_indentation_error_shows_the_line_without_its_indentation(folder: Path) -> None:
    shown = refusal(folder, "indented.py", indented="if True:\n    ready = 1\n      late = 2\n")
    assert shown == [
        "Error: loading indented.py raised IndentationError: unexpected indent",
        '  File "indented.py", line 3',
        "    late = 2",
        "    ^",
    ]


def test_a_module_that_is_not_installed_names_the_import_and_where_to_install_it(folder: Path) -> None:
    shown = refusal(folder, "needs.py", needs="import json\nimport not_installed_anywhere\n")
    assert shown[:3] == [
        "Error: loading needs.py raised ModuleNotFoundError: No module named 'not_installed_anywhere'",
        '  File "needs.py", line 2, in <module>',
        "    import not_installed_anywhere",
    ]
    assert shown[3] == (
        "  If 'not_installed_anywhere' is a package you installed, install it for the Python mycelium runs on: "
        f"{sys.executable} -m pip install <the package that provides it>"
    )


def test_a_name_error_at_module_level_points_at_the_name(folder: Path) -> None:
    shown = refusal(folder, "names.py", names="LIMIT = 10\nPAGE = LIMT * 2\n")
    assert shown == [
        "Error: loading names.py raised NameError: name 'LIMT' is not defined",
        '  File "names.py", line 2, in <module>',
        "    PAGE = LIMT * 2",
        "           ^^^^",
    ]


def test_an_exception_in_the_factory_names_the_factorys_line(folder: Path) -> None:
    factory = 'def create_catalog():\n    settings = {}\n    return settings["database"]\n'
    shown = refusal(folder, "factory.py", factory=factory)
    assert shown == [
        "Error: calling factory.py:create_catalog raised KeyError: 'database'",
        '  File "factory.py", line 3, in create_catalog',
        '    return settings["database"]',
        "           ^^^^^^^^^^^^^^^^^^^^",
    ]


def test_a_mistake_mycelium_refuses_names_the_apps_call_not_the_library(folder: Path) -> None:
    app = 'from mycelium import Module\n\nnotes = Module(id="notes-v1", name="my notes")\n'
    shown = refusal(folder, "naming.py", naming=app)
    assert shown[0].startswith("Error: loading naming.py raised DefinitionError: module 'notes-v1': name must be")
    assert shown[1:3] == [
        '  File "naming.py", line 3, in <module>',
        '    notes = Module(id="notes-v1", name="my notes")',
    ]


def test_a_failure_in_a_module_the_app_imports_names_that_module(folder: Path) -> None:
    raised = refusal(folder, "main_app.py", main_app="import settings\n", settings="PORT = int('eighty')\n")
    parsed = refusal(folder, "other_app.py", other_app="import helpers\n", helpers="def tidy(:\n    pass\n")
    assert raised[:3] == [
        "Error: loading main_app.py raised ValueError: invalid literal for int() with base 10: 'eighty'",
        '  File "settings.py", line 1, in <module>',
        "    PORT = int('eighty')",
    ]
    assert parsed[:3] == [
        "Error: loading other_app.py raised SyntaxError: invalid syntax",
        '  File "helpers.py", line 1',
        "    def tidy(:",
    ]


def test_an_async_factorys_task_group_failure_names_the_task_that_failed(folder: Path) -> None:
    app = (
        "import anyio\n\n"
        "async def create_catalog():\n"
        "    async with anyio.create_task_group() as tasks:\n"
        "        tasks.start_soon(connect)\n\n"
        "async def connect():\n"
        '    raise ConnectionError("the database at db.internal refused")\n'
    )
    shown = refusal(folder, "grouped.py", grouped=app)
    assert shown == [
        "Error: calling grouped.py:create_catalog raised ConnectionError: the database at db.internal refused",
        '  File "grouped.py", line 8, in connect',
        '    raise ConnectionError("the database at db.internal refused")',
    ]


def test_an_app_named_as_a_module_names_its_file_inside_the_package(folder: Path) -> None:
    (folder / "shop").mkdir()
    (folder / "shop" / "__init__.py").write_text("")
    (folder / "shop" / "app.py").write_text('import json\n\nPRICES = json.loads("{")\n')
    shown = mycelium("describe", "shop.app", cwd=folder)
    assert shown.returncode == 2
    assert shown.stderr.splitlines()[:4] == [
        "Error: importing shop.app raised JSONDecodeError: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        '  File "shop/app.py", line 3, in <module>',
        '    PRICES = json.loads("{")',
        "             ^^^^^^^^^^^^^^^",
    ]

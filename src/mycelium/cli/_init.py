"""``mycelium init [DIR]``: a small app to start from, which ``serve``, ``check`` and pytest accept at once.

The app is one module of a to-do list in SQLite: a read, a write and a delete a person
confirms, with a test. Nothing is overwritten: a folder that already holds one of the files
is refused, and nothing is written.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from ._console import say
from ._exits import ExitCode

_FILES = {"app.py": "app.py.txt", "test_app.py": "test_app.py.txt"}


_FOLDER = typer.Argument(help="Where to write the app (made if missing).", show_default=False)


def init(folder: Annotated[Path, _FOLDER] = Path(".")) -> None:
    """Write a small app to start from: app.py (a to-do list in SQLite) and its test.

    Then `mycelium check app.py`, `mycelium exec app.py -c 'return await tasks.open_tasks()'`
    and `mycelium serve app.py` work in that folder. Exit code 2 when a file is already there.
    """
    taken = [name for name in _FILES if (folder / name).exists()]
    if taken:
        typer.echo(f"Error: {folder / taken[0]} already exists; choose an empty folder (mycelium init DIR)", err=True)
        raise typer.Exit(ExitCode.BAD_USAGE)
    folder.mkdir(parents=True, exist_ok=True)
    template = resources.files(__package__).joinpath("template")
    for name, source in _FILES.items():
        (folder / name).write_text(template.joinpath(source).read_text())
    where = "" if folder == Path(".") else f"cd {folder} && "
    say(f"Wrote {', '.join(str(folder / name) for name in _FILES)}. Next:")
    say(f"  {where}mycelium check app.py")
    say(f"  {where}mycelium exec app.py -c 'return await tasks.add(title=\"try it\")'")
    say(f"  {where}mycelium serve app.py")

"""The examples a newcomer runs first must keep doing what the README says."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from types import ModuleType

import pytest

from mycelium import Access, Runtime, ToolResult
from mycelium.mcp import Member
from mycelium.sandbox.monty import MontySandbox
from tests.support.paths import EXAMPLES


def output_of(example: str) -> str:
    """What ``examples/<example>.py`` prints, run as a newcomer runs it; it must exit cleanly."""
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{example}.py")], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_quickstart_labels_its_result_exactly_as_the_readme_shows() -> None:
    assert output_of("quickstart") == 'The program returned: ["buy milk"]\n'


async def test_closing_the_runtime_lets_the_interpreter_exit_cleanly_every_time() -> None:
    # Monty's pool can abort the interpreter at exit (code 134) when the loop ends right
    # after the pool closes; run the quick start repeatedly to catch it.
    import anyio

    results: list[int] = []

    async def once() -> None:
        completed = await anyio.run_process([sys.executable, str(EXAMPLES / "quickstart.py")], check=False)
        results.append(completed.returncode)

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(once)
    assert results == [0] * 8


def test_approvals_example_resumes_after_a_restart_without_adding_the_contacts_again() -> None:
    assert output_of("approvals").splitlines() == [
        "model reads: Paused for approval: crm.contacts.delete needs a person to approve it before it runs",
        "person is asked: crm.contacts.delete {'id': 1}",
        "program printed: delete answered: True",
        'result: {"added":[1,2,3],"removed":true,"left":2}',
    ]


def test_computer_source_example_keeps_computer_a_for_the_first_lease() -> None:
    assert output_of("computer_source").splitlines() == [
        "acquired Computer A",
        'L1 revision 1: {"computer":"Computer A"}',
        "host switches to Computer B",
        "acquired Computer B",
        'L2 revision 2: {"computer":"Computer B"}',
        'L1 revision 1: {"computer":"Computer A"}',
        "releasing L1",
        "released Computer A",
        "released Computer B",
        "runtime closed",
    ]


# -- the notes app (examples/notes_app.py), served by `mycelium serve`; see also tests/cli/test_serve.py --


@pytest.fixture(scope="module")
def notes_app() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("notes_app_under_test", EXAMPLES / "notes_app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


async def run_notes(notes_app: ModuleType, folder: Path, code: str, *, confirm: bool | None = None) -> ToolResult:
    """One execute against the app's modules over ``folder``, as a fresh process would run it."""
    modules = notes_app.build_modules(notes_app.NotesStore.open(folder))
    ask = None if confirm is None else (lambda request: confirm)
    async with Runtime(modules=modules, sandbox=MontySandbox(), access=Access(confirm=ask)) as runtime:
        async with runtime.lease() as lease:
            return await lease.execute_tool.run(code, tool_call_id="notes-test")


def stored_titles(folder: Path) -> list[str]:
    with closing(sqlite3.connect(folder / "notes.db")) as db:
        return [title for (title,) in db.execute("SELECT title FROM notes ORDER BY id")]


async def test_notes_app_creates_and_seeds_its_data_directory_once_and_keeps_writes_across_restarts(
    notes_app: ModuleType, tmp_path: Path
) -> None:
    folder = tmp_path / "data" / "notes"  # nested and missing: created on first run
    first = await run_notes(
        notes_app,
        folder,
        """
import asyncio
note = await notes.create(title="Buy film", body="35 mm", tags=["home", "errands"])
tagged = await notes.tags.add(note_id=note["id"], tag="urgent")
renamed = await notes.update(id=note["id"], title="Buy film today")
found, home = await asyncio.gather(notes.search(text="launch"), notes.list(tag="home"))
print(f"{len(found)} launch notes")
return {"tags": tagged["tags"], "title": renamed["title"], "found": len(found), "home": len(home)}
""",
    )
    assert not first.is_error, first.text
    assert first.value == {"tags": ["errands", "home", "urgent"], "title": "Buy film today", "found": 3, "home": 2}
    assert list(first.logs) == ["3 launch notes"]
    seeded = len(notes_app.SEED)
    assert stored_titles(folder) == [title for title, _, _ in notes_app.SEED] + ["Buy film today"]

    # A restart: new store, modules and runtime over the same folder. Nothing is seeded twice.
    second = await run_notes(
        notes_app,
        folder,
        f"""
note = await notes.get(id={seeded + 1})
return {{"note": note, "all": len(await notes.list(limit=100)), "tags": await notes.tags.list()}}
""",
    )
    assert not second.is_error, second.text
    assert second.value["note"]["title"] == "Buy film today"
    assert second.value["note"]["body"] == "35 mm"
    assert second.value["all"] == seeded + 1
    assert {"tag": "urgent", "notes": 1} in second.value["tags"]


async def test_notes_app_deletes_only_after_a_person_confirms(notes_app: ModuleType, tmp_path: Path) -> None:
    program = "return await notes.delete(id=1)"
    unasked = await run_notes(notes_app, tmp_path, program)
    declined = await run_notes(notes_app, tmp_path, program, confirm=False)
    assert unasked.value["reason"] == "confirmation-unavailable"
    assert declined.value["reason"] == "confirmation-declined"
    assert len(stored_titles(tmp_path)) == len(notes_app.SEED)

    approved = await run_notes(notes_app, tmp_path, program, confirm=True)
    again = await run_notes(notes_app, tmp_path, program, confirm=True)
    assert approved.value == {"id": 1, "deleted": True}
    assert again.value == {"id": 1, "deleted": False}
    assert len(stored_titles(tmp_path)) == len(notes_app.SEED) - 1


async def test_notes_app_reports_missing_notes_as_null_and_rejects_bad_input_before_running(
    notes_app: ModuleType, tmp_path: Path
) -> None:
    result = await run_notes(
        notes_app,
        tmp_path,
        """
missing = [await notes.get(id=999), await notes.update(id=999, body="x"), await notes.tags.add(note_id=999, tag="a")]
try:
    await notes.create(title="x", tags=["Not A Tag"])
except ValueError as error:
    return {"missing": missing, "rejected": "tags" in str(error)}
""",
    )
    assert result.value == {"missing": [None, None, None], "rejected": True}
    assert len(stored_titles(tmp_path)) == len(notes_app.SEED)


def test_notes_app_keeps_its_data_under_mycelium_data_dir_or_the_default_folder(
    notes_app: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MYCELIUM_DATA_DIR", raising=False)
    assert notes_app.data_dir() == Path(".mycelium-data") / "notes"
    monkeypatch.setenv("MYCELIUM_DATA_DIR", str(tmp_path))
    assert notes_app.data_dir() == tmp_path


async def test_notes_app_catalog_grants_write_on_the_same_module_objects_every_time(
    notes_app: ModuleType, tmp_path: Path
) -> None:
    async with notes_app.create_catalog(tmp_path) as catalog:
        first = await catalog.refresh(Member("local", "owner"))
        second = await catalog.refresh(Member("someone", "guest"))
    assert first.grants == {"example-notes": "write"}
    assert len(first.sources) == len(second.sources) == 1
    assert first.sources[0] is second.sources[0]
    assert "notes.delete" in first.instructions

"""`mycelium serve --evidence-dir DIR`: the operator's evidence of each failure as DIR/<reference>.json.

End to end: a real `mycelium serve` process serves an app whose operation fails with a
database password in its exception, to the official SDK client over HTTP; the model reads a
reference and nothing of the host, and the file of that reference holds the exception. The
folder's bounds (file size, file count) are checked on the writer itself.
"""

from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._evidence import MAX_FILE_BYTES, EvidenceFiles
from mycelium.failures import FailureEvidence, GuestException, Unknown
from tests.cli.test_serve import connected, serving, text_of

SECRET = "hunter2-ledger-password"
TOKEN = "evidence-test-token-" + "t" * 20

APP = f'''
from mycelium import ExecutionOptions, Module
from mycelium.mcp import McpAuthority, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox

ledger = Module(id="ledger-v1", name="ledger")


@ledger.operation(access="read")
def total() -> int:
    """Fails on the host, as a real database driver does: with its URL in the message."""
    raise ConnectionError("could not connect to postgresql://ledger:{SECRET}@db.internal/ledger " + "x" * 200_000)


def create_catalog():
    authority = McpAuthority(grants={{"ledger-v1": "read"}}, sources=[ledger])
    return create_mcp_catalog(
        load=lambda principal: authority, sandbox=MontySandbox(), execution=ExecutionOptions(timeout_ms=500)
    )
'''


def reference_in(text: str) -> str:
    return text.split("(reference ")[1].split(")")[0]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_serve_writes_each_host_failures_evidence_under_the_reference_the_model_reads(tmp_path: Path) -> None:
    app, folder = tmp_path / "ledger_app.py", tmp_path / "evidence"
    app.write_text(APP)
    async with serving(
        tmp_path / "data", tmp_path / "server.log", token=TOKEN, app=[str(app)], options=["--evidence-dir", str(folder)]
    ) as served:
        async with connected(served.url, TOKEN) as client:
            host = await client.call_tool("execute", {"code": "return await ledger.total()"})
            mistake = await client.call_tool("execute", {"code": 'raise ValueError("the program\'s own")'})
            endless = await client.call_tool("execute", {"code": "while True:\n    pass"})
        assert await served.stop() == 0
    assert SECRET not in text_of(host)  # the model reads a reference, never the host's exception
    written = {path.name for path in folder.iterdir()}
    assert written == {f"{reference_in(text_of(host))}.json", f"{reference_in(text_of(endless))}.json"}
    assert f"{reference_in(text_of(mistake))}.json" not in written  # the program's own mistake is routine

    operation = folder / f"{reference_in(text_of(host))}.json"
    entry = json.loads(operation.read_text())
    assert entry["kind"] == "operation-error"
    assert (entry["path"], entry["module_id"], entry["stage"]) == ("ledger.total", "ledger-v1", "execute")
    assert entry["execution_id"].startswith("exec-")
    assert entry["exception"]["type"] == "builtins.ConnectionError"
    assert SECRET in entry["exception"]["message"]  # the operator's evidence, in the operator's folder
    assert "raise ConnectionError" in entry["exception"]["traceback"]
    assert operation.stat().st_size < 64 * 1024  # a 200 KB message is cut
    deadline = json.loads((folder / f"{reference_in(text_of(endless))}.json").read_text())
    assert deadline["kind"] == "execute-failure"
    assert deadline["failure"]["code"] == "deadline-exceeded"
    assert mode(folder) == 0o700
    assert all(mode(path) == 0o600 for path in folder.iterdir())


def evidence_of(failure: GuestException | Unknown, reference: str) -> FailureEvidence:
    return FailureEvidence(
        reference=reference,
        failure=failure,
        execution_id="exec-1",
        session_id=None,
        tool_call_id="call-1",
        adapter="monty",
        build_sha=None,
        duration_ms=1.0,
        cause=RuntimeError("x" * 1_000_000),
    )


def test_serve_refuses_an_evidence_folder_others_may_open_saying_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "evidence"
    folder.mkdir()
    folder.chmod(0o755)
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "no_app_here.py"), "--evidence-dir", str(folder)])
    assert result.exit_code == 2
    assert "chmod 700" in result.output
    folder.chmod(0o700)
    EvidenceFiles(folder)  # once it is the owner's alone, it is taken as it is


async def test_the_evidence_folder_keeps_the_newest_files_only(tmp_path: Path) -> None:
    files = EvidenceFiles(tmp_path / "evidence", max_files=2)
    for number in range(4):
        await files.execute_failed(evidence_of(Unknown(), f"ref-{number:012x}"))
    assert sorted(path.name for path in (tmp_path / "evidence").iterdir()) == [
        "ref-000000000002.json",
        "ref-000000000003.json",
    ]
    # A later run counts what an earlier one left.
    again = EvidenceFiles(tmp_path / "evidence", max_files=2)
    await again.execute_failed(evidence_of(Unknown(), "ref-00000000000a"))
    assert len(list((tmp_path / "evidence").iterdir())) == 2


async def test_the_evidence_folder_files_no_program_mistake_and_no_name_that_is_not_a_reference(
    tmp_path: Path,
) -> None:
    files = EvidenceFiles(tmp_path / "evidence")
    await files.execute_failed(evidence_of(GuestException(type_name="ValueError", message="m"), "ref-0000000000aa"))
    await files.execute_failed(evidence_of(Unknown(), "../../outside"))
    assert [path.name async for path in anyio.Path(tmp_path).iterdir()] == ["evidence"]
    assert [path async for path in anyio.Path(tmp_path / "evidence").iterdir()] == []


async def test_an_evidence_file_fits_its_bound_whatever_the_texts_in_it(tmp_path: Path) -> None:
    # Escaped as \uXXXX in the file, each of these characters takes six bytes of the file.
    wide = "\u00e9" * 1_000_000
    try:
        try:
            raise RuntimeError(wide)
        except RuntimeError as first:
            raise ValueError(wide) from first
    except ValueError as second:
        cause = second
    files = EvidenceFiles(tmp_path / "evidence")
    evidence = dataclasses.replace(evidence_of(Unknown(), "ref-0000000000bb"), tool_call_id=wide, session_id=wide)
    await files.execute_failed(dataclasses.replace(evidence, cause=cause))
    written = tmp_path / "evidence" / "ref-0000000000bb.json"
    assert written.stat().st_size <= MAX_FILE_BYTES
    entry = json.loads(written.read_text())
    assert entry["cause"]["caused_by"]["type"] == "builtins.RuntimeError"  # cut shorter, never left out
    assert entry["tool_call_id"].startswith("\u00e9")


async def test_evidence_goes_to_the_folder_checked_at_start_though_the_path_names_another(tmp_path: Path) -> None:
    private, elsewhere = tmp_path / "private", tmp_path / "elsewhere"
    private.mkdir(mode=0o700)
    elsewhere.mkdir()
    elsewhere.chmod(0o777)  # a folder anyone may read, as another user's would be
    path = tmp_path / "evidence"
    path.symlink_to(private)
    files = EvidenceFiles(path)
    try:
        # As a symlink in a shared folder can be swapped by whoever made it, after the checks passed.
        path.unlink()
        path.symlink_to(elsewhere)
        await files.execute_failed(evidence_of(Unknown(), "ref-0000000000cc"))
    finally:
        files.close()
    assert [found.name for found in private.iterdir()] == ["ref-0000000000cc.json"]
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("under", ["taken", "taken/evidence"], ids=["a file", "a path under a file"])
def test_serve_refuses_an_evidence_dir_it_cannot_make_before_loading_the_app(tmp_path: Path, under: str) -> None:
    (tmp_path / "taken").write_text("")
    target = tmp_path / under
    result = CliRunner().invoke(cli, ["serve", str(tmp_path / "no_app_here.py"), "--evidence-dir", str(target)])
    assert result.exit_code == 2
    assert "--evidence-dir" in result.output

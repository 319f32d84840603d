"""``@modelcontextprotocol/server-filesystem`` over stdio, rooted at a temporary folder, called from programs."""

from __future__ import annotations

import os
from pathlib import Path

from mycelium import Access

from .conftest import node_runtime, server_script

PACKAGE = "@modelcontextprotocol/server-filesystem"


def folder(tmp_path: Path) -> Path:
    """A folder with two text files and a subfolder; resolved, as the server resolves its root."""
    root = tmp_path.resolve() / "root"
    (root / "notes").mkdir(parents=True)
    (root / "alpha.txt").write_text("first line of alpha\nsecond line\n")
    (root / "beta.txt").write_text("beta has one line\n")
    return root


def with_root(root: Path, body: str) -> str:
    return f"ROOT = {str(root)!r}\n{body}"


async def test_a_program_lists_the_folder_and_reads_two_files_at_once(tmp_path: Path) -> None:
    root = folder(tmp_path)
    program = with_root(
        root,
        """
import asyncio
listing = await filesystem.list_directory(path=ROOT)
entries = sorted(listing["content"].splitlines())  # in the order the file system keeps them
alpha, beta = await asyncio.gather(
    filesystem.read_text_file(path=ROOT + "/alpha.txt"),
    filesystem.read_text_file(path=ROOT + "/beta.txt"),
)
return {
    "entries": entries,
    "files": len([entry for entry in entries if entry.startswith("[FILE]")]),
    "lines": {"alpha": len(alpha["content"].splitlines()), "beta": len(beta["content"].splitlines())},
    "first": alpha["content"].splitlines()[0],
}
""",
    )
    async with node_runtime("filesystem", PACKAGE, str(root)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)

    assert not result.is_error, result.text
    assert result.value == {
        "entries": ["[DIR] notes", "[FILE] alpha.txt", "[FILE] beta.txt"],
        "files": 2,
        "lines": {"alpha": 2, "beta": 1},
        "first": "first line of alpha",
    }


async def test_a_path_outside_the_root_fails_with_the_servers_words_and_nothing_of_the_file(tmp_path: Path) -> None:
    root = folder(tmp_path)
    outside = root.parent / "outside.txt"
    outside.write_text("not for the agent")
    program = with_root(
        root,
        f"""
try:
    await filesystem.read_text_file(path={str(outside)!r})
except RuntimeError as error:
    return str(error)
return "read it"
""",
    )
    async with node_runtime("filesystem", PACKAGE, str(root)) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)

    assert not result.is_error, result.text
    assert isinstance(result.value, str)
    assert result.value.startswith("filesystem.read_text_file failed; server 'filesystem' says: Access denied")
    assert "outside allowed directories" in result.value
    assert "not for the agent" not in result.value


async def test_a_read_grant_lets_reads_through_and_refuses_writes_the_server_marks_as_writes(tmp_path: Path) -> None:
    root = folder(tmp_path)
    program = with_root(
        root,
        """
written = await filesystem.write_file(path=ROOT + "/new.txt", content="hello")
listing = await filesystem.list_directory(path=ROOT)
return {"written": written, "entries": len(listing["content"].splitlines())}
""",
    )
    access = Access(grants={"filesystem": "read"})
    async with node_runtime("filesystem", PACKAGE, str(root), access=access) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run(program)

    assert not result.is_error, result.text
    assert isinstance(result.value, dict)
    assert result.value["entries"] == 3
    written = result.value["written"]
    assert isinstance(written, dict)
    assert (written["refused"], written["reason"]) == (True, "read-only-grant")
    assert not (root / "new.txt").exists()


def node_children(script: str) -> set[int]:
    """Live (not zombie) processes this process started that run ``script``, from /proc."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The command may hold spaces and parentheses: the fields follow the last ')'.
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid() and state != "Z" and script.encode() in command:
            found.add(int(entry))
    return found


async def test_closing_the_runtime_ends_the_node_server(tmp_path: Path) -> None:
    root = folder(tmp_path)
    script = server_script(PACKAGE)
    async with node_runtime("filesystem", PACKAGE, str(root)) as runtime:
        async with runtime.lease() as lease:
            result = await lease.execute_tool.run("return await filesystem.list_allowed_directories()")
            assert not result.is_error, result.text
            assert len(node_children(script)) == 1
    assert node_children(script) == set()

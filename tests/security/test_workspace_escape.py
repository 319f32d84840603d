"""A mounted workspace is the only host directory a guest reaches, and only its own session's.

The host mounts one directory per session at ``/workspace``. These programs try to leave
it: by ``..``, through symlinks the host happens to have there, into another session's
workspace, and by writing past the write limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mycelium import Session

from .conftest import Host, Outcome

WRITE_LIMIT = 64 * 1024


def plant(root: Path) -> dict[str, Path]:
    """Two session workspaces, a secret outside both, and symlinks from A's workspace to it."""
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET-outside-the-workspace")
    workspace_a = root / "workspaces" / "a"
    workspace_b = root / "workspaces" / "b"
    workspace_a.mkdir(parents=True)
    workspace_b.mkdir(parents=True)
    (workspace_b / "b.txt").write_text("TOPSECRET-of-session-b")
    (workspace_a / "link.txt").symlink_to(outside / "secret.txt")
    (workspace_a / "linkdir").symlink_to(outside)
    return {"root": root, "outside": outside, "a": workspace_a, "b": workspace_b}


def listing(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


def written_bytes(directory: Path) -> int:
    return sum(entry.stat().st_size for entry in directory.iterdir() if not entry.is_symlink())


ESCAPES = {
    "dot-dot-to-other-session": "open('/workspace/../b/b.txt').read()",
    "dot-dot-to-outside": "open('/workspace/../../outside/secret.txt').read()",
    "symlinked-file": "open('/workspace/link.txt').read()",
    "through-symlinked-dir": "open('/workspace/linkdir/secret.txt').read()",
    "write-through-symlinked-dir": "open('/workspace/linkdir/new.txt', 'w').write('pwned')",
    "make-a-symlink": "import os\nos.symlink('/etc/passwd', '/workspace/pw')",
}


@pytest.mark.parametrize("code", ESCAPES.values(), ids=ESCAPES.keys())
async def test_a_guest_cannot_leave_its_session_workspace(host: Host, tmp_path: Path, code: str) -> None:
    paths = plant(tmp_path)
    runtime = await host.open(
        session=Session("a"),
        workspace=lambda session_id: paths["root"] / "workspaces" / str(session_id),
        workspace_write_limit_bytes=WRITE_LIMIT,
    )
    outcome: Outcome = await host.run(code, runtime)
    assert outcome.code == "guest-exception", outcome.result.text
    assert "TOPSECRET" not in outcome.result.text
    assert "TOPSECRET" not in str(outcome.result.failure)
    assert listing(paths["outside"]) == ["secret.txt"]
    assert listing(paths["b"]) == ["b.txt"]


async def test_writing_past_the_workspace_write_limit_fails(host: Host, tmp_path: Path) -> None:
    paths = plant(tmp_path)
    runtime = await host.open(
        session=Session("a"),
        workspace=lambda session_id: paths["root"] / "workspaces" / str(session_id),
        workspace_write_limit_bytes=WRITE_LIMIT,
    )
    outcome = await host.run(f"open('/workspace/big.txt', 'w').write('x' * {WRITE_LIMIT * 100})", runtime)
    assert outcome.code == "guest-exception", outcome.result.text
    assert written_bytes(paths["a"]) <= WRITE_LIMIT

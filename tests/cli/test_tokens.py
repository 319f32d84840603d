"""The tokens `mycelium serve` generates are kept, owner-only, so a pasted client config survives a restart.

Real `mycelium serve` processes on the notes app, real files in a temporary data folder;
the file checks run against real symlinks, FIFOs and modes.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mycelium.cli import cli
from mycelium.cli._tokens import TokenFileError, kept_token
from tests.cli.test_serve import NOTES_APP, connected, serving, text_of

OWNER_ONLY = 0o600


def serve_once(data_dir: Path, *options: str) -> tuple[int, str]:
    """`mycelium serve` on the notes app in this process, for what it refuses before serving."""
    unset = {"MYCELIUM_TOKEN": None, "MYCELIUM_APPROVER_TOKEN": None, "MYCELIUM_DATA_DIR": None}
    args = ["serve", str(NOTES_APP), "--port", "0", "--data-dir", str(data_dir), *options]
    result = CliRunner().invoke(cli, args, env=unset)
    return result.exit_code, result.stdout + result.stderr


async def test_a_generated_token_is_kept_owner_only_so_a_restart_serves_the_same_one(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "server.log"
    async with serving(data_dir, log) as served:
        first = served.printed_token
        assert f"generated and kept in {data_dir / 'token'}" in "".join(served.banner)
        assert await served.stop() == 0
    kept = data_dir / "token"
    assert stat.S_IMODE(kept.stat().st_mode) == OWNER_ONLY
    assert stat.S_IMODE((data_dir / "approver-token").stat().st_mode) == OWNER_ONLY

    async with serving(data_dir, log) as served:
        assert served.printed_token == first
        assert f"(kept in {kept}; delete the file for a new one, or set MYCELIUM_TOKEN)" in "".join(served.banner)
        async with connected(served.url, first) as client:  # the config pasted after the first run still works
            answer = await client.call_tool("execute", {"code": "return 6 * 7"})
            assert text_of(answer) == "42"
        assert await served.stop() == 0
    assert first not in log.read_text()


async def test_a_token_chosen_in_the_environment_wins_and_nothing_is_written_for_it(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "server.log"
    data_dir.mkdir()
    kept = kept_token(data_dir / "token").value
    chosen = "operator-chosen-token-" + "c" * 20
    async with serving(data_dir, log, token=chosen) as served:
        assert kept not in "".join(served.banner)
        async with connected(served.url, chosen) as client:
            assert (await client.list_tools()).tools
        assert await served.stop() == 0
    assert (data_dir / "token").read_text().strip() == kept  # neither read for serving nor replaced


def test_a_token_file_others_may_read_is_refused_with_the_chmod_that_fixes_it(tmp_path: Path) -> None:
    kept = tmp_path / "token"
    kept.write_text("s3cret-token-value\n")
    kept.chmod(0o644)
    code, output = serve_once(tmp_path)
    assert code == 2, output
    assert f"may be read or changed by other users (mode 644): run `chmod 600 {kept}`" in output
    assert "s3cret-token-value" not in output
    kept.chmod(OWNER_ONLY)
    assert kept_token(kept).value == "s3cret-token-value"


def test_a_data_folder_others_may_write_in_is_refused_saying_how_to_close_it(tmp_path: Path) -> None:
    # Whoever may write there could swap the two kept files: the agents' token would open the page.
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    data_dir.chmod(0o777)
    code, output = serve_once(data_dir)
    assert code == 2, output
    assert f"others may write in {data_dir}" in output
    assert f"chmod 700 {data_dir}" in output
    assert not (data_dir / "token").exists()
    data_dir.chmod(0o755)  # readable by others is no harm: the files themselves are owner-only
    assert kept_token(data_dir / "token").source == "generated"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_a_data_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "theirs"
    data_dir.mkdir(mode=0o700)
    os.chown(data_dir, 4242, -1)
    with pytest.raises(TokenFileError, match=r"belongs to another user \(uid 4242\): name a folder of your own"):
        kept_token(data_dir / "token")


def test_a_token_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("planted-token\n")
    elsewhere.chmod(OWNER_ONLY)
    (tmp_path / "token").symlink_to(elsewhere)
    with pytest.raises(TokenFileError, match=r"is a symbolic link; .* delete .* to have a new token generated"):
        kept_token(tmp_path / "token")


def test_a_fifo_in_place_of_the_token_file_is_refused_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "token", OWNER_ONLY)
    with pytest.raises(TokenFileError, match="is not a regular file"):
        kept_token(tmp_path / "token")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_token_file_of_another_user_is_refused(tmp_path: Path) -> None:
    kept = tmp_path / "token"
    kept.write_text("theirs\n")
    kept.chmod(OWNER_ONLY)
    os.chown(kept, 4242, -1)
    with pytest.raises(TokenFileError, match=r"belongs to another user \(uid 4242\)"):
        kept_token(kept)


@pytest.mark.parametrize("content", [b"", b"\n  \n", b"two words\n", "caf\u00e9".encode(), b"x" * 2000])
def test_a_token_file_that_holds_no_token_says_to_delete_it_and_never_quotes_it(tmp_path: Path, content: bytes) -> None:
    kept = tmp_path / "token"
    kept.write_bytes(content)
    kept.chmod(OWNER_ONLY)
    with pytest.raises(TokenFileError, match=f"delete {kept} to have a new token generated") as refused:
        kept_token(kept)
    if content.strip():
        assert content.decode(errors="replace")[:4] not in str(refused.value)


def test_a_new_token_file_is_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        made = kept_token(tmp_path / "data" / "token")
    finally:
        os.umask(previous)
    assert made.source == "generated"
    assert stat.S_IMODE((tmp_path / "data" / "token").stat().st_mode) == OWNER_ONLY
    assert os.listdir(tmp_path / "data") == ["token"]  # the file written under a temporary name is gone


def test_servers_starting_at_once_agree_on_one_kept_token(tmp_path: Path) -> None:
    path, starting = tmp_path / "token", threading.Barrier(8)
    results = []

    def start() -> None:
        starting.wait()
        results.append(kept_token(path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({secret.value for secret in results}) == 1
    assert [secret.source for secret in results].count("generated") == 1
    assert os.listdir(tmp_path) == ["token"]


def test_an_approver_token_kept_equal_to_the_agents_token_is_refused(tmp_path: Path) -> None:
    for name in ("token", "approver-token"):
        (tmp_path / name).write_text("the-same-token-twice\n")
        (tmp_path / name).chmod(OWNER_ONLY)
    code, output = serve_once(tmp_path)
    assert code == 2, output
    assert "is the agents' token too: an agent must never approve its own calls" in output
    assert f"delete {tmp_path / 'approver-token'} to have a new one generated" in output
    assert "the-same-token-twice" not in output

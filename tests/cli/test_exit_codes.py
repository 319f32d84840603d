"""One exit-code table for every verb, as a script reads it: 0 done, 1 the work failed, 2 nothing could be tried, 130
interrupted. Each case runs the real `mycelium` command in a process of its own."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.command import MYCELIUM, command_env, mycelium
from tests.support.paths import APPS

TINY_APP = '''
import sys

import anyio

from mycelium import Module

tiny = Module(id="tiny-v1", name="tiny", description="A tiny app")


@tiny.operation(access="read")
def echo(text: str) -> str:
    """Return the text as it came."""
    return text


async def slow():
    """Never finishes loading: says so on stderr, then waits for Ctrl-C."""
    print("loading the slow app", file=sys.stderr, flush=True)
    await anyio.sleep_forever()
'''

# A config whose one server cannot start: it loads, and the work against it fails.
DOWN_CONFIG = {"mcpServers": {"down": {"command": "/nonexistent/mcp-server"}}}

# How each verb that loads an app is run against APP: the rest of its command line.
VERB_ARGS = {
    "serve": ["--port", "0"],
    "exec": ["-c", 'return await tiny.echo(text="hi")'],
    "describe": [],
    "search": ["echo"],
    "check": [],
}
APP_VERBS = list(VERB_ARGS)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "tiny.py").write_text(TINY_APP)
    (tmp_path / "typo.py").write_text("from mycelium import Module\n\ndef create_catalog(:\n    pass\n")
    (tmp_path / "down.json").write_text(json.dumps(DOWN_CONFIG))
    return tmp_path


def verb_line(verb: str, app: str) -> list[str]:
    return [verb, app, *VERB_ARGS[verb]]


@pytest.mark.parametrize("verb", APP_VERBS)
def test_every_verb_exits_2_and_names_the_apps_line_when_the_app_cannot_be_loaded(folder: Path, verb: str) -> None:
    broken = mycelium(*verb_line(verb, "typo.py"), cwd=folder)
    assert broken.returncode == 2
    assert broken.stderr.startswith("Error: loading typo.py raised SyntaxError"), broken.stderr
    assert 'File "typo.py", line 3' in broken.stderr
    assert "Traceback" not in broken.stderr


@pytest.mark.parametrize("verb", APP_VERBS)
def test_every_verb_exits_2_when_its_config_is_missing(folder: Path, verb: str) -> None:
    missing = mycelium(verb, "--config", "missing.json", *VERB_ARGS[verb], cwd=folder)
    assert missing.returncode == 2
    assert "missing.json: no such file" in missing.stderr


@pytest.mark.parametrize("verb", [*APP_VERBS, "init"])
def test_every_verb_exits_2_for_an_option_it_does_not_have(folder: Path, verb: str) -> None:
    unknown = mycelium(verb, "--no-such-option", cwd=folder)
    assert unknown.returncode == 2
    assert "No such option: --no-such-option" in unknown.stderr


def test_init_exits_2_for_a_folder_already_holding_an_app_and_0_for_a_fresh_one(folder: Path) -> None:
    (folder / "taken").mkdir()
    (folder / "taken" / "app.py").write_text("mine = 1\n")
    refused = mycelium("init", "taken", cwd=folder)
    made = mycelium("init", "fresh", cwd=folder)
    assert (refused.returncode, made.returncode) == (2, 0)
    assert "choose an empty folder" in refused.stderr


@pytest.mark.parametrize("verb", ["exec", "describe", "search", "check"])
def test_a_local_verb_exits_0_when_done_and_1_when_its_source_fails(folder: Path, verb: str) -> None:
    done = mycelium(*verb_line(verb, "tiny.py:tiny"), cwd=folder)
    # A config that loads, whose server cannot start: the work was tried, and failed.
    failed = mycelium(verb, "--config", "down.json", *VERB_ARGS[verb], cwd=folder)
    assert (done.returncode, failed.returncode) == (0, 1), done.stderr + failed.stderr
    assert "failed to acquire" in failed.stdout + failed.stderr


def test_exec_exits_1_when_the_program_fails_and_prints_its_value_when_it_succeeds(folder: Path) -> None:
    succeeded = mycelium("exec", "tiny.py:tiny", "-c", 'return await tiny.echo(text="hi")', cwd=folder)
    failed = mycelium("exec", "tiny.py:tiny", "-c", "return await tiny.echo()", cwd=folder)
    assert (succeeded.returncode, succeeded.stdout) == (0, '"hi"\n')
    assert failed.returncode == 1
    assert failed.stderr.startswith("guest-exception:")


def test_an_app_whose_modules_cannot_be_installed_exits_2_and_check_reports_why_with_1(folder: Path) -> None:
    flawed = str(APPS / "flawed_app.py")
    ran = mycelium("exec", flawed, "-c", "return 1", cwd=folder)
    checked = mycelium("check", flawed, cwd=folder)
    assert ran.returncode == 2
    assert "choose another name, or place the module under a namespace" in ran.stderr
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[-1] == "2 errors, 3 warnings"


def test_serve_exits_1_when_its_port_is_in_use_and_says_to_choose_another(folder: Path) -> None:
    with closing(socket.socket()) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = mycelium("serve", "tiny.py:tiny", "--port", str(port), cwd=folder)
    assert refused.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in refused.stderr
    assert "pass --port with another port, or --port 0 for a free one" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert "Token" not in refused.stdout  # nothing is announced that does not serve


@pytest.mark.parametrize("verb", APP_VERBS)
def test_every_verb_exits_130_when_interrupted_while_the_app_loads(folder: Path, verb: str) -> None:
    process = subprocess.Popen(
        [MYCELIUM, *verb_line(verb, "tiny.py:slow")],
        cwd=folder,
        env=command_env(folder / ".data"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        said: list[str] = []
        while not said or "loading the slow app" not in said[-1]:
            line = process.stderr.readline()
            assert line, f"mycelium {verb} ended before the app loaded: {''.join(said)}"
            said.append(line)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        rest = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
    assert code == 130, rest
    assert rest.strip().splitlines()[-1] == "Interrupted."
    assert "Traceback" not in rest

"""Real MCP servers nobody here wrote, from npm: found where `make test` installed them, or skipped.

``npm-packages.txt`` pins each package (``name@version``, one a line); the Makefile installs
them into ``.thirdparty/`` at the repository root, without network access in the tests. A
test asks for a server with :func:`server_script`, which skips (saying why) when ``node``
is not on the PATH, when a package is not installed, or when the installed version is not
the pinned one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mycelium import Access, ExecutionOptions, Runtime
from mycelium.mcp import mcp_source
from mycelium.sandbox.monty import MontySandbox

ROOT = Path(__file__).resolve().parents[2]
PINS = Path(__file__).with_name("npm-packages.txt")
INSTALLED = ROOT / ".thirdparty" / "node_modules"
TIMEOUT_MS = 30_000  # a server that hangs fails the execute, typed, well within the test's 60 s


def pinned() -> dict[str, str]:
    """Package name -> pinned version, from ``npm-packages.txt``."""
    pins: dict[str, str] = {}
    for line in PINS.read_text().split():
        name, _, version = line.rpartition("@")
        pins[name] = version
    return pins


def installed_manifest(package: str) -> dict[str, Any]:
    """The ``package.json`` of a pinned package in ``.thirdparty/``; skips if it is missing or another version."""
    manifest = INSTALLED / package / "package.json"
    if not manifest.is_file():
        pytest.skip(f"{package} is not installed in .thirdparty/ (run `make test`, which needs npm)")
    metadata: dict[str, Any] = json.loads(manifest.read_text())
    wanted = pinned()[package]
    if metadata["version"] != wanted:
        pytest.skip(f"{package} {metadata['version']} is installed, {wanted} is pinned (run `make test`)")
    return metadata


def bin_script(package: str, name: str | None = None) -> Path:
    """The pinned ``package``'s entry script (its ``bin``, the one called ``name`` if it has several)."""
    bin_entry = installed_manifest(package)["bin"]
    relative = bin_entry if isinstance(bin_entry, str) else bin_entry[name] if name else next(iter(bin_entry.values()))
    return INSTALLED / package / relative


def pinned_node() -> str:
    """The Node.js of npm's pinned ``node`` package (newer than many machines' own); skips without it."""
    installed_manifest("node")
    node = INSTALLED / "node" / "bin" / "node"
    wanted = f"v{pinned()['node']}"
    try:
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError as error:
        version = repr(error)
    if version != wanted:
        pytest.skip(
            f"{node} answers {version!r} to --version, not {wanted!r}: npm's `node` package did not install its"
            " binary (its preinstall script fetches it; an npm that refuses install scripts leaves none)"
        )
    return str(node)


def server_script(package: str) -> str:
    """The installed entry script of ``package`` (its ``bin``), to run with ``node``; skips if unavailable."""
    if shutil.which("node") is None:
        pytest.skip("node is not on the PATH: the third-party MCP servers cannot run")
    return str(bin_script(package))


def node_runtime(
    source_id: str, package: str, *args: str, env: dict[str, str] | None = None, access: Access | None = None
) -> Runtime:
    """A runtime whose one source is ``node <package's script> *args`` over stdio."""
    source = mcp_source(source_id, command="node", args=[server_script(package), *args], env=env)
    return Runtime(
        sources=[source], sandbox=MontySandbox(), execution=ExecutionOptions(timeout_ms=TIMEOUT_MS), access=access
    )

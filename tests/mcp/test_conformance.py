"""The official MCP conformance suite, a client nobody here wrote, against a served catalog.

The suite (npm ``@modelcontextprotocol/conformance``) and the Node it needs (>= 22, from
npm's ``node`` package: the machine's own Node is older) are pinned in
``tests/thirdparty/npm-packages.txt`` and installed into ``.thirdparty/`` by ``make test``;
without them these tests skip and say why. For each scenario the suite offers, this
module either runs it at each protocol revision the server serves that the scenario
targets (the handshake revisions, which open with ``initialize``, and 2026-07-28, stateless,
with ``_meta`` on each request: a scenario passing on one wire says nothing of another),
or names it in :data:`NOT_APPLICABLE` with the reason; a test checks that the two together
are exactly what the installed suite offers at exactly those revisions, so a scenario a
later version adds, or a revision the server starts serving, is noticed.

A scenario passes when the suite says so: exit code 0 and no failed check, given a
baseline (the suite's ``--expected-failures``) of only the checks in
:data:`NOT_APPLICABLE_CHECKS` (they need the suite's own fixture tools, or features we do
not offer) and :data:`KNOWN_FAILURES` (what the server still gets wrong), each of which
may fail only in the words its entry says; a known failure that passes fails the test,
so its entry goes once the server is fixed. Warnings (the suite's SHOULDs) do not fail.

The suite cannot send an Authorization header, so it gets a server whose ``authenticate``
admits one fixed principal whatever the request says; every other test of the server
authenticates. Everything else is as a host serves it: ``create_mcp`` over uvicorn on
127.0.0.1, over a ``create_mcp_catalog`` on the real Monty sandbox with the MCP tests'
notes module (one of its operations, ``notes.delete``, asks for confirmation). A fresh
server serves each run, so no scenario sees another's connections. The suite runs with
``anyio.run_process``: a blocking call would stop the server it talks to in this loop.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.requests import HTTPConnection

from mycelium.mcp import PROTOCOL_VERSIONS, Admitted, Agent, create_mcp, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox
from tests.support.loopback import serve_asgi
from tests.thirdparty.conftest import bin_script, pinned_node

from .conftest import Host

SUITE_PACKAGE = "@modelcontextprotocol/conformance"
STATELESS = "2026-07-28"
"""The per-request revision (no session, ``_meta`` on each request); every older one opens with ``initialize``."""
SCENARIO_TIMEOUT_MS = 20_000
RUN_WITHIN_S = 45

SUITE = Agent("mcp-conformance-suite")
"""The one principal the suite is admitted as."""


def admit_the_suite(request: HTTPConnection) -> Admitted:
    """Admit every request as :data:`SUITE`: the suite can send no Authorization header."""
    return Admitted(SUITE)


# --- What does not apply, and why -------------------------------------------------------------

FIXTURE = "calls the suite's fixture {what}, which only its reference server has; ours lists one tool, `execute`"
NO_RESOURCES = "we offer no resources (no `resources` capability): every resources/* request is -32601"
NO_PROMPTS = "we offer no prompts (no `prompts` capability): every prompts/* request is -32601"
MRTR_FIXTURE = (
    FIXTURE + "; our input-required results come only from `execute` running a `confirm=True` operation, a program"
    " the suite cannot send"
)
TASKS = "the tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) is not implemented"
SKILLS = "the skills extension (SEP-2640) is not implemented"

NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": (
        "we declare no `logging` capability (the server sends no log messages), so `logging/setLevel` is rightly"
        " -32601 Method not found"
    ),
    "completion-complete": (
        "we declare no `completions` capability: with no prompts and no resource templates there is no argument"
        " to complete, so `completion/complete` is -32601"
    ),
    "tools-call-simple-text": FIXTURE.format(what="tool `test_simple_text`"),
    "tools-call-image": FIXTURE.format(what="tool `test_image_content`"),
    "tools-call-audio": FIXTURE.format(what="tool `test_audio_content`"),
    "tools-call-embedded-resource": FIXTURE.format(what="tool `test_embedded_resource`"),
    "tools-call-mixed-content": FIXTURE.format(what="tool `test_multiple_content_types`"),
    "tools-call-with-logging": FIXTURE.format(what="tool `test_tool_with_logging`"),
    "tools-call-error": FIXTURE.format(what="tool `test_error_handling`"),
    "tools-call-with-progress": FIXTURE.format(what="tool `test_tool_with_progress`"),
    "tools-call-sampling": FIXTURE.format(what="tool `test_sampling`") + "; we never ask the client to sample",
    "tools-call-elicitation": FIXTURE.format(what="tool `test_elicitation`"),
    "json-schema-2020-12": FIXTURE.format(what="tool `json_schema_2020_12_tool`"),
    "elicitation-sep1034-defaults": FIXTURE.format(what="tool `test_elicitation_sep1034_defaults`"),
    "elicitation-sep1330-enums": FIXTURE.format(what="tool `test_elicitation_sep1330_enums`"),
    "server-sse-polling": FIXTURE.format(what="tool `test_reconnection`") + " (and the suite marks it pending)",
    "resources-list": NO_RESOURCES,
    "resources-read-text": NO_RESOURCES,
    "resources-read-binary": NO_RESOURCES,
    "resources-templates-read": NO_RESOURCES,
    "resources-subscribe": NO_RESOURCES,
    "resources-unsubscribe": NO_RESOURCES,
    "sep-2164-resource-not-found": NO_RESOURCES + "; its -32602 for an unknown resource is for servers that have some",
    "prompts-list": NO_PROMPTS,
    "prompts-get-simple": NO_PROMPTS,
    "prompts-get-with-args": NO_PROMPTS,
    "prompts-get-embedded-resource": NO_PROMPTS,
    "prompts-get-with-image": NO_PROMPTS,
    "http-custom-header-server-validation": (
        "needs a tool with an `x-mcp-header` parameter (SEP-2243 custom headers); `execute` has one parameter,"
        " `code`, a program that never travels in a header"
    ),
    "input-required-result-basic-elicitation": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_elicitation`"
    ),
    "input-required-result-basic-sampling": MRTR_FIXTURE.format(what="tool `test_input_required_result_sampling`"),
    "input-required-result-basic-list-roots": MRTR_FIXTURE.format(what="tool `test_input_required_result_list_roots`"),
    "input-required-result-request-state": MRTR_FIXTURE.format(what="tool `test_input_required_result_request_state`"),
    "input-required-result-multiple-input-requests": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_multiple_inputs`"
    ),
    "input-required-result-multi-round": MRTR_FIXTURE.format(what="tool `test_input_required_result_multi_round`"),
    "input-required-result-missing-input-response": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_elicitation`"
    ),
    "input-required-result-non-tool-request": MRTR_FIXTURE.format(what="prompt `test_input_required_result_prompt`"),
    "input-required-result-result-type": MRTR_FIXTURE.format(what="tool `test_input_required_result_elicitation`"),
    "input-required-result-tampered-state": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_tampered_state`"
    ),
    "input-required-result-capability-check": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_capabilities`"
    ),
    "input-required-result-ignore-extra-params": MRTR_FIXTURE.format(
        what="tool `test_input_required_result_elicitation`"
    ),
    "input-required-result-validate-input": MRTR_FIXTURE.format(what="tool `test_input_required_result_elicitation`"),
    "tasks-lifecycle": TASKS,
    "tasks-capability-negotiation": TASKS,
    "tasks-wire-fields": TASKS,
    "tasks-request-state-removal": TASKS,
    "tasks-mrtr-input": TASKS,
    "tasks-request-headers": TASKS,
    "tasks-dispatch-and-envelope": TASKS,
    "tasks-status-notifications": TASKS,
    "tasks-required-task-error": TASKS,
    "tasks-mrtr-composition": TASKS,
    "sep-2640-skills-directory": SKILLS,
    "sep-2640-skills-enumeration": SKILLS,
    "sep-2640-skills-manifest": SKILLS,
}
"""Scenario -> why it does not apply to this server (at any revision)."""


@dataclass(frozen=True)
class Excused:
    """A check of a run scenario let fail, ``reason`` saying why, but only with ``expect`` in the suite's message."""

    reason: str
    expect: str


UNTESTABLE = "Not testable: server does not list the diagnostic tool"
NOT_APPLICABLE_CHECKS: dict[tuple[str, str], Excused] = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"): Excused(
        "needs the suite's diagnostic tool `test_missing_capability` (it needs `sampling`, which nothing of ours does)",
        UNTESTABLE,
    ),
    ("server-stateless", "sep-2575-missing-capability-http-400"): Excused(
        "needs the suite's diagnostic tool `test_missing_capability`", UNTESTABLE
    ),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream"): Excused(
        "needs the suite's diagnostic tool `test_streaming_elicitation`", UNTESTABLE
    ),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel"): Excused(
        "needs the suite's diagnostic tool `test_logging_tool`", UNTESTABLE
    ),
    ("caching", "sep-2549-prompts-list-caching-hints"): Excused(
        NO_PROMPTS, "prompts/list returned JSON-RPC error -32601"
    ),
    ("caching", "sep-2549-resources-list-caching-hints"): Excused(
        NO_RESOURCES, "resources/list returned JSON-RPC error -32601"
    ),
    ("caching", "sep-2549-resources-templates-list-caching-hints"): Excused(
        NO_RESOURCES, "resources/templates/list returned JSON-RPC error -32601"
    ),
}
"""(scenario, check id) -> why that one check of a run scenario does not apply, and how it may fail."""


# --- What runs ---------------------------------------------------------------------------------

RUN_AT: dict[str, tuple[str, ...]] = {
    "server-initialize": ("2025-06-18", "2025-11-25"),
    "server-session-lifecycle": ("2025-03-26", "2025-06-18", "2025-11-25"),
    "ping": ("2025-06-18", "2025-11-25"),
    "tools-list": ("2025-06-18", "2025-11-25", STATELESS),
    "server-sse-multiple-streams": ("2025-11-25", STATELESS),
    "dns-rebinding-protection": ("2025-11-25", STATELESS),
    "server-stateless": (STATELESS,),
    "caching": (STATELESS,),
    "http-header-validation": (STATELESS,),
    "input-required-result-unsupported-methods": (STATELESS,),
}
"""Scenario -> the revisions it runs at: each one it targets that the server serves (``PROTOCOL_VERSIONS``)."""
RUN = [(scenario, revision) for scenario, revisions in RUN_AT.items() for revision in revisions]

KNOWN_FAILURES: dict[tuple[str, str], Excused] = {}
"""(scenario, check id) -> a check that fails today, and the suite's words for it.

Each is in the run's baseline, so the rest of its scenario still counts. Strict: once it
passes, or fails in other words, the test fails, and the entry goes (or is reworded).
"""


# --- The installed suite ----------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    """The pinned suite: how to run it, and the environment it runs in."""

    node: str
    script: Path
    env: dict[str, str]

    def command(self, *args: str) -> list[str]:
        return [self.node, str(self.script), *args]

    def server_scenarios(self) -> dict[str, frozenset[str]]:
        """Every server scenario it offers -> the revisions it targets (``extension`` for an extension's)."""
        done = subprocess.run(
            self.command("list", "--server"), env=self.env, capture_output=True, text=True, timeout=60, check=True
        )
        listed = re.findall(r"^\s*- (\S+) \[([^\]]*)\]$", done.stdout, flags=re.MULTILINE)
        assert listed, done.stdout
        return {name: frozenset(revisions.split(",")) for name, revisions in listed}

    async def run(
        self, url: str, scenario: str, revision: str, folder: Path, baseline: list[str]
    ) -> subprocess.CompletedProcess[bytes]:
        """Run one server scenario at one revision against ``url``, its results saved under ``folder``."""
        args = ["server", "--url", url, "--scenario", scenario, "--spec-version", revision]
        args += ["--timeout", str(SCENARIO_TIMEOUT_MS), "--output-dir", str(folder / "results")]
        if baseline:
            expected = folder / "expected-failures.yml"
            expected.write_text("server:\n" + "".join(f"  - {scenario}:{check}\n" for check in baseline))
            args += ["--expected-failures", str(expected)]
        with anyio.fail_after(RUN_WITHIN_S):
            return await anyio.run_process(
                self.command(*args), cwd=folder, env=self.env, check=False, stdin=subprocess.DEVNULL
            )


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """The pinned suite and the pinned Node that runs it, from ``.thirdparty/``; skips, saying why, without them."""
    node = pinned_node()
    home = tmp_path_factory.mktemp("conformance-home")
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "FORCE_COLOR": "0"}
    script = bin_script(SUITE_PACKAGE, "conformance")
    return Suite(node, script, env)


@asynccontextmanager
async def served_to_the_suite() -> AsyncIterator[str]:
    """A real server for the suite on 127.0.0.1: ``create_mcp`` over the notes catalog, admitting :data:`SUITE`."""
    host = Host()
    host.grant(SUITE, notes="write", reports="read")
    async with AsyncExitStack() as stack:
        catalog = await stack.enter_async_context(create_mcp_catalog(load=host.load, sandbox=MontySandbox()))
        server = create_mcp(catalog=catalog, authenticate=admit_the_suite)
        base = await stack.enter_async_context(serve_asgi(server.asgi))
        yield f"{base}/mcp"


def described(checks: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {check['status']} {check['id']}: {check.get('errorMessage') or check.get('description', '')}"
        for check in checks
    )


# --- The tests --------------------------------------------------------------------------------


def test_every_scenario_the_suite_offers_is_run_or_said_not_to_apply(suite: Suite) -> None:
    offered = suite.server_scenarios()
    run_names = set(RUN_AT)
    assert not run_names & set(NOT_APPLICABLE), "a scenario is both run and said not to apply"
    assert set(offered) - run_names == set(NOT_APPLICABLE), "the suite offers other scenarios than these"
    served = set(PROTOCOL_VERSIONS)
    assert {name: set(RUN_AT[name]) for name in run_names} == {name: offered[name] & served for name in run_names}
    assert {scenario for scenario, _ in [*NOT_APPLICABLE_CHECKS, *KNOWN_FAILURES]} <= run_names
    assert not set(NOT_APPLICABLE_CHECKS) & set(KNOWN_FAILURES)


@pytest.mark.parametrize(("scenario", "revision"), RUN, ids=[f"{scenario}@{revision}" for scenario, revision in RUN])
async def test_the_suite_passes_the_scenario(suite: Suite, tmp_path: Path, scenario: str, revision: str) -> None:
    excused = {check: why for (name, check), why in NOT_APPLICABLE_CHECKS.items() if name == scenario}
    known = {check: why for (name, check), why in KNOWN_FAILURES.items() if name == scenario}
    async with served_to_the_suite() as url:
        done = await suite.run(url, scenario, revision, tmp_path, sorted({*excused, *known}))
    output = (done.stdout + done.stderr).decode(errors="replace")
    saved = list((tmp_path / "results").glob("*/checks.json"))
    assert len(saved) == 1, f"the suite saved no result (exit {done.returncode}):\n{output[-4000:]}"
    checks: list[dict[str, Any]] = json.loads(saved[0].read_text())
    assert checks, f"the suite ran no check:\n{output[-4000:]}"
    failed = [check for check in checks if check["status"] == "FAILURE" and check["id"] not in {*excused, *known}]
    assert not failed, f"{scenario} at {revision} failed:\n{described(failed)}"
    wrongly = [
        check
        for check in checks
        if check["status"] == "FAILURE"
        and check["id"] in excused
        and excused[check["id"]].expect not in (check.get("errorMessage") or "")
    ]
    assert not wrongly, f"{scenario} at {revision} failed checks that only may not apply:\n{described(wrongly)}"
    outcomes = {check["id"]: check for check in checks}
    for check, why in known.items():
        outcome = outcomes.get(check)
        assert outcome is not None, f"{check} ran no more: remove it from KNOWN_FAILURES"
        assert outcome["status"] == "FAILURE", f"{check} is {outcome['status']} now: remove it from KNOWN_FAILURES"
        said = outcome.get("errorMessage") or ""
        assert why.expect in said, f"{check} fails otherwise than KNOWN_FAILURES says: {said}"
    assert done.returncode == 0, f"the suite exits {done.returncode}:\n{output[-4000:]}"

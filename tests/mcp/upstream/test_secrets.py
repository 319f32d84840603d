"""Header and env values never show: not in descriptions, results, errors, logs or the source's repr.

Logs here are Mycelium's, at every level, and everyone's from INFO up: the SDK's and the
HTTP client's DEBUG logs record the wire traffic itself (a host leaves them off).
"""

from __future__ import annotations

import logging

import pytest

from mycelium import MyceliumSourceError
from mycelium.mcp import mcp_source

from .conftest import http_served, runtime, stdio_source
from .servers import Upstream
from .test_lifetime import unused_port

ENV_CANARY = "env-canary-7f3a9c01"
HEADER_CANARY = "header-canary-52be11d4"


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """What a host's logs would hold: Mycelium's at every level, everyone's from INFO up."""
    kept = [r for r in caplog.records if r.name.startswith("mycelium") or r.levelno >= logging.INFO]
    return "\n".join(record.getMessage() for record in kept)


async def test_an_env_value_never_reaches_descriptions_or_results(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    source = stdio_source(env={"CANARY_ENV": ENV_CANARY, "DEBUG": "1"})
    async with runtime(source) as rt, rt.lease() as lease:
        said = await lease.execute_tool.run("return await up.whoami()")
        described = await lease.execute_tool.run("return await forage.describe('up.whoami')")
        definition = lease.execute_tool.definition.description
    assert said.value == {"said": "env=[redacted] header="}
    assert "[redacted]" in str(described.value)
    shown = [said.text, described.text, definition, repr(source), logged(caplog)]
    assert not any(ENV_CANARY in text for text in shown)


async def test_a_header_value_never_reaches_results_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with http_served(Upstream()) as url:
        source = mcp_source("up", url=url, headers={"Authorization": f"Bearer {HEADER_CANARY}"})
        async with runtime(source) as rt, rt.lease() as lease:
            said = await lease.execute_tool.run("return await up.whoami()")
    # The server saw the header (the call was authenticated); the program sees it redacted.
    assert said.value == {"said": "env= header=[redacted]"}
    assert HEADER_CANARY not in logged(caplog)
    assert HEADER_CANARY not in repr(source)


async def test_a_failing_server_says_nothing_of_its_secrets_in_the_error_or_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"http://user:{HEADER_CANARY}@127.0.0.1:{unused_port()}/mcp?key={ENV_CANARY}"
    failing = mcp_source("down", url=url, headers={"X-Api-Key": HEADER_CANARY})
    optional = mcp_source("skipped", url=url, headers={"X-Api-Key": HEADER_CANARY}, optional=True)
    async with runtime(failing) as rt:
        with pytest.raises(MyceliumSourceError) as caught:
            await rt.acquire()
    async with runtime(optional) as rt, rt.lease():
        pass
    errors = [str(caught.value), str(caught.value.__cause__)]
    assert "optional MCP server 'skipped' is skipped" in logged(caplog)
    for canary in (HEADER_CANARY, ENV_CANARY):
        assert not any(canary in text for text in errors)
        assert canary not in logged(caplog)

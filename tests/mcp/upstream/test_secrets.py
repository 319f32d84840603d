"""Header and env values never show: not in descriptions, results, errors, logs or the source's repr.

Logs here are Mycelium's, at every level, and everyone's from INFO up: the SDK's and the
HTTP client's DEBUG logs record the wire traffic itself (a host leaves them off).
"""

from __future__ import annotations

import logging

import pytest

from mycelium import MyceliumSourceError, OperationEvidence, Runtime
from mycelium._exceptions import MAX_ERROR_MESSAGE_CHARS
from mycelium.mcp import mcp_source
from mycelium.sandbox.monty import MontySandbox

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


@pytest.mark.parametrize("value", ["73925501846271", "0073925501846271", "-73925501846271"])
async def test_a_secret_of_digits_sent_back_as_numbers_never_shows_in_any_form(value: str) -> None:
    source = stdio_source(env={"CANARY_NUMBER": value})
    async with runtime(source) as rt, rt.lease() as lease:
        structured = await lease.execute_tool.run("return await up.numbers(form='structured')")
        written = await lease.execute_tool.run("return await up.numbers(form='text')")
        failed = await lease.execute_tool.run(
            "try:\n    await up.numbers(form='error')\nexcept RuntimeError as e:\n    return str(e)"
        )
        described = await lease.execute_tool.run("return await forage.describe('up.numbers')")
        (target,) = [t for t in lease.catalog.targets if t.path == "up.numbers"]
    # Every number that shows the digits becomes the string "[redacted]"; other numbers and booleans stay.
    assert structured.value == {
        "int": "[redacted]",
        "negative": "[redacted]",
        "float": "[redacted]",
        "tiny": "[redacted]",
        "inside": "[redacted]",
        "[redacted]": "a key",
        "nested": [[{"n": "[redacted]"}]],
        "small": 12,
        "flag": True,
        "pi": 3.14159,
    }
    words = "code [redacted] and [redacted]"
    assert written.value == {
        "exponent": "[redacted]",
        "negative": "[redacted]",
        "words": words,
        "grouped": "[redacted]",
    }
    assert failed.value == "up.numbers failed; server 'up' says: quota [redacted] exceeded"
    assert target.operation.input_schema["properties"]["limit"]["default"] == "[redacted]"
    digits = value.lstrip("-0")
    shown = [structured.text, written.text, failed.text, described.text, str(target.operation.description)]
    assert not any(digits[:8] in text for text in shown)


async def test_an_error_text_of_megabytes_reaches_the_program_cut_to_its_bound_and_redacted() -> None:
    source = stdio_source(env={"CANARY_NUMBER": "73925501846271"})
    async with runtime(source) as rt, rt.lease() as lease:
        program = "try:\n    await up.numbers(form='long_error')\nexcept RuntimeError as e:\n    return str(e)"
        failed = str((await lease.execute_tool.run(program)).value)
    said = "up.numbers failed; server 'up' says: "
    assert failed.startswith(f"{said}quota [redacted] exceeded and so on and so on")
    assert failed.endswith("...")
    assert len(failed) <= len(said) + MAX_ERROR_MESSAGE_CHARS


async def test_a_redacted_number_where_the_output_schema_wants_one_fails_on_the_host_without_showing_it() -> None:
    errors: list[OperationEvidence] = []
    source = stdio_source(env={"CANARY_NUMBER": "73925501846271"})
    rt = Runtime(sources=[source], sandbox=MontySandbox(), on_operation_error=errors.append)
    async with rt, rt.lease() as lease:
        result = await lease.execute_tool.run("return await up.add(a=73925501, b=0)")
    assert result.failure is not None
    assert result.failure.code == "capability-failed"
    assert "'[redacted]' is not of type 'integer'" in str(errors[0].exception)
    assert "73925501" not in result.text + str(errors[0].exception)

"""``@modelcontextprotocol/server-everything`` over stdio: every tool it lists, called from a program."""

from __future__ import annotations

from typing import Any

from .conftest import node_runtime

PACKAGE = "@modelcontextprotocol/server-everything"
# gzip-file-as-resource fetches URLs: only this (unresolvable) domain may be fetched, so no call leaves the machine.
NO_NETWORK = {"GZIP_ALLOWED_DOMAINS": "nowhere.invalid"}
# The tools it registers for every client, whatever the client can do.
ALWAYS_LISTED = {
    "echo",
    "get_annotated_message",
    "get_env",
    "get_resource_links",
    "get_resource_reference",
    "get_structured_content",
    "get_sum",
    "get_tiny_image",
    "gzip_file_as_resource",
    "toggle_simulated_logging",
    "toggle_subscriber_updates",
    "trigger_long_running_operation",
}


def example(schema: dict[str, Any]) -> object:
    """The simplest value ``schema`` accepts: the first choice, the minimum, every property filled in.

    Numbers without a minimum are 1 (``trigger-long-running-operation`` then takes one second,
    not its default ten); a URI is a ``data:`` URI, never an address on the network.
    """
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for choice in ("anyOf", "oneOf"):
        if choice in schema:
            return example(schema[choice][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(each for each in kind if each != "null")
    if kind == "string":
        return "data:text/plain;base64,aGVsbG8=" if schema.get("format") == "uri" else "hello"
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return [example(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind == "object":
        return {name: example(field) for name, field in schema.get("properties", {}).items()}
    return None


async def test_every_tool_it_lists_is_callable_from_its_schema_or_fails_with_the_servers_words() -> None:
    outcomes: dict[str, dict[str, Any]] = {}
    async with node_runtime("everything", PACKAGE, "stdio", env=NO_NETWORK) as runtime, runtime.lease() as lease:
        targets = [target for target in lease.catalog.targets if target.module.id == "everything"]
        for target in targets:
            arguments = example(target.operation.input_schema)
            program = f"""
try:
    return {{"value": await {target.path}({arguments!r})}}
except RuntimeError as error:
    return {{"error": str(error)}}
"""
            result = await lease.execute_tool.run(program)
            # Never a host failure, a crash of the session or a hang (the execute's deadline).
            assert not result.is_error, f"{target.path}({arguments!r}): {result.text}"
            assert isinstance(result.value, dict)
            outcomes[target.relative] = result.value

    assert set(outcomes) >= ALWAYS_LISTED
    for relative, outcome in outcomes.items():
        if "error" in outcome:
            assert outcome["error"].startswith(f"everything.{relative} failed; server 'everything' says: ")
    assert outcomes["echo"] == {"value": "Echo: hello"}
    assert outcomes["get_sum"] == {"value": "The sum of 1 and 1 is 2."}
    assert set(outcomes["get_structured_content"]["value"]) == {"temperature", "conditions", "humidity"}
    # An image reaches the program as a typed, bounded value: its type and size, no base64.
    image = [block for block in outcomes["get_tiny_image"]["value"] if isinstance(block, dict)]
    assert [(block["type"], block["mimeType"]) for block in image] == [("image", "image/png")]
    assert image[0]["bytes"] > 0
    assert outcomes["trigger_long_running_operation"]["value"].startswith("Long running operation completed")
    # A tool that needs task augmentation (which a plain tools/call is not) says so, as the server's error.
    assert "requires task augmentation" in outcomes["simulate_research_query"]["error"]


async def test_a_secret_in_the_servers_environment_never_reaches_the_program() -> None:
    secret = "tok-7f3a9c0e5b1d2468"
    environment = {**NO_NETWORK, "MYCELIUM_PROBE_TOKEN": secret}
    async with node_runtime("everything", PACKAGE, "stdio", env=environment) as runtime, runtime.lease() as lease:
        result = await lease.execute_tool.run("return await everything.get_env()")

    assert not result.is_error, result.text
    assert isinstance(result.value, dict)
    assert "MYCELIUM_PROBE_TOKEN" in result.value
    assert secret not in result.text

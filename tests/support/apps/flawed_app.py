"""An app with one of each catalog problem `mycelium check` reports (used by tests/cli/test_local.py)."""

from pydantic import BaseModel

from mycelium import AcquireContext, Acquired, CapabilitySource, Module, operation, source
from mycelium.mcp import McpAuthority, McpCatalog, create_mcp_catalog
from mycelium.sandbox.monty import MontySandbox


class Saved(BaseModel):
    ok: bool


def saved() -> Saved:
    return Saved(ok=True)


notes = Module(
    id="notes",
    name="notes",
    operations={
        "add": operation(output=Saved, execute=saved, description="Add a note."),
        "vague": operation(execute=saved),
        "wordy": operation(output=Saved, execute=saved, description="Adds " + "and more " * 30),
    },
)
clashing = Module(
    id="clashing",
    name="json",
    operations={"read": operation(output=Saved, execute=saved, description="Read a note.")},
)


async def unreachable(context: AcquireContext) -> Acquired:
    raise ConnectionError("the directory at 10.0.0.9 refused")


def serving(*sources: Module | CapabilitySource) -> McpCatalog:
    return create_mcp_catalog(
        load=lambda principal: McpAuthority(grants={"notes": "write"}, sources=sources), sandbox=MontySandbox()
    )


def create_catalog() -> McpCatalog:
    """Errors and warnings."""
    return serving(notes, clashing, source(id="directory", acquire=unreachable))


def only_warnings() -> McpCatalog:
    """Warnings only: it can be served."""
    return serving(notes)

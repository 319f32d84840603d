"""Catalog checks: what a model would stumble over, found before any model meets it.

:func:`check_catalog` installs each module and acquires each source on its own, so every broken
one is reported (not only the first), then looks at the catalog they make together. It
runs nothing a guest wrote and holds nothing afterwards: every snapshot it acquired is
released before it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from ._context import Session
from ._discovery import Catalog
from ._exceptions import DefinitionError, MyceliumSourceError
from ._execute import inline_stubs
from ._graph import OperationGraph, build_graph
from ._language import LanguageFacts
from ._modules import Module
from ._sources import Capabilities, CapabilitySource

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_FIRST_LINE_CHARS", "Finding", "Severity", "check_catalog"]

Severity = Literal["error", "warning", "note"]
"""``error``: the catalog cannot be served as it is; ``warning``: a model is likely to go wrong; ``note``: to know."""

MAX_FIRST_LINE_CHARS = 160
"""Search results show an operation's first description line, clipped to this many characters."""

MAX_DESCRIPTION_CHARS = 1_000
"""A description longer than this crowds the execute description's budget for the whole catalog."""


@dataclass(frozen=True)
class Finding:
    """One problem: how serious, a stable code, where (a module or source id, or an operation path), what to do."""

    severity: Severity
    code: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message} [{self.code}]"


async def check_catalog(
    *,
    modules: Sequence[Module] = (),
    sources: Sequence[CapabilitySource] = (),
    session: Session | None = None,
    language: LanguageFacts,
) -> list[Finding]:
    """Check ``modules`` and ``sources`` as a runtime running programs in ``language`` would
    install them; errors first, then by place.

    Error codes: ``definition`` (a module cannot be installed: a name clashing with a
    sandbox module or builtin, a key that is also a prefix, a duplicate id...), ``source``
    (a source failed to acquire or gave modules that cannot be installed). Warnings:
    ``no-description``, ``long-first-line``, ``long-description``, ``untyped-input``,
    ``untyped-output``.
    Note: ``not-inline`` (the catalog is too large to declare in the execute description,
    so the model discovers operations with ``forage``).
    """
    findings: list[Finding] = []
    installable: list[Module] = []
    for module in modules:
        try:
            build_graph([module], revision=0, language=language)
        except DefinitionError as exc:
            findings.append(Finding("error", "definition", module.id, str(exc)))
        else:
            installable.append(module)
    for source in sources:
        installable.extend(await _acquired_modules(source, session, language, findings))
    try:
        graph = build_graph(installable, revision=0, language=language)
    except DefinitionError as exc:  # each part installs alone, but not together
        findings.append(Finding("error", "definition", exc.module_id or "catalog", str(exc)))
    else:
        findings.extend(_operation_findings(graph))
    rank = {"error": 0, "warning": 1, "note": 2}
    return sorted(findings, key=lambda finding: (rank[finding.severity], finding.where, finding.code))


async def _acquired_modules(
    source: CapabilitySource, session: Session | None, language: LanguageFacts, findings: list[Finding]
) -> list[Module]:
    """The modules ``source`` gives now (recording why when it gives none), released before returning."""
    try:
        capabilities = Capabilities(modules=(), sources=[source], session=session, language=language)
    except ValueError as exc:
        findings.append(Finding("error", "source", source.id, str(exc)))
        return []
    modules: list[Module] = []
    # What the source starts for its snapshot ends when the snapshot is released, inside this group.
    async with anyio.create_task_group() as tasks:
        try:
            revision = await capabilities.capture(tasks)
        except (MyceliumSourceError, DefinitionError) as exc:
            # A source's own account, written to be shown (an upstream server's, secrets removed), says
            # what to do; whatever else it raised stays behind its type.
            shown = exc.__cause__ if isinstance(exc.__cause__, MyceliumSourceError) else exc
            findings.append(Finding("error", "source", source.id, str(shown)))
        else:
            try:
                modules = [module for snapshot in revision.snapshots for module in snapshot.modules]
            finally:
                await capabilities.release(revision)
                await capabilities.close()
    return modules


def _operation_findings(graph: OperationGraph) -> list[Finding]:
    found: list[Finding] = []
    catalog = Catalog(graph)
    for target in catalog.targets:
        op, path = target.operation, target.path
        description = (op.description or "").strip()
        if not description:
            found.append(
                Finding("warning", "no-description", path, "no description: the model sees only its name and types")
            )
        else:
            first = description.splitlines()[0].strip()
            if len(first) > MAX_FIRST_LINE_CHARS:
                found.append(
                    Finding(
                        "warning",
                        "long-first-line",
                        path,
                        f"the description's first line is {len(first)} characters; search results clip it "
                        f"at {MAX_FIRST_LINE_CHARS}, so say what it does first and briefly",
                    )
                )
            if len(description) > MAX_DESCRIPTION_CHARS:
                found.append(
                    Finding(
                        "warning",
                        "long-description",
                        path,
                        f"the description is {len(description)} characters, over {MAX_DESCRIPTION_CHARS}: "
                        "it crowds the execute description; keep details in field descriptions",
                    )
                )
        untyped = _untyped_input(op.input_schema)
        if untyped is not None:
            found.append(Finding("warning", "untyped-input", path, untyped))
        if not op.output_schema:
            found.append(
                Finding(
                    "warning",
                    "untyped-output",
                    path,
                    "no output type: the model cannot know the shape of the result; give it one",
                )
            )
    if catalog.targets and inline_stubs(catalog) is None:
        found.append(
            Finding(
                "note",
                "not-inline",
                "catalog",
                f"the {len(catalog.targets)} operations' stubs are too long to declare in the execute "
                "description: the model is shown the namespace tree and finds operations with forage.search",
            )
        )
    return found


# Keywords that describe a value without constraining it: a property with only these takes anything.
_ANNOTATION_KEYWORDS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_NAMED_AT_MOST = 8
"""How many untyped parameters one finding names; an operation with more is told how many more."""


def _untyped_input(schema: dict[str, Any]) -> str | None:
    """What to write when the input, or some of its parameters, takes any value; ``None`` when all are typed."""
    if not schema:
        return "no input type: the model cannot know what to pass, and any value gets through; give it one"
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    untyped = {
        name: property_schema
        for name, property_schema in properties.items()
        if isinstance(property_schema, dict) and property_schema.keys() <= _ANNOTATION_KEYWORDS
    }
    if not untyped:
        return None
    named = list(untyped)[:_NAMED_AT_MOST]
    more = f" and {len(untyped) - len(named)} more" if len(untyped) > len(named) else ""
    listed = ", ".join(repr(name) for name in named) + more
    examples = ", ".join(f"`{_annotated(name, untyped[name])}`" for name in named[:2])
    if len(untyped) == 1:
        return (
            f"parameter {listed} has no type: the model must guess what to pass, and any value gets through; "
            f'annotate it ({examples}), or give it a "type" in the input schema'
        )
    return (
        f"parameters {listed} have no type: the model must guess what to pass, and any value gets through; "
        f'annotate each one (e.g. {examples}), or give each a "type" in the input schema'
    )


def _annotated(name: str, property_schema: dict[str, Any]) -> str:
    """The parameter as it could be written with a type: its default's own type when it has a default."""
    if "default" not in property_schema:
        return f"{name}: str"
    default = property_schema["default"]
    kind = "str | None" if default is None else type(default).__name__
    shown = repr(default) if len(repr(default)) <= 30 else "..."
    return f"{name}: {kind} = {shown}"

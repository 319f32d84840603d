"""Apps that are not catalogs: a module, a list of modules or a runtime, served to their owner alone.

A first app is often just a :class:`~mycelium.Module` (``mycelium check todo.py:todo``) or the
:class:`~mycelium.Runtime` its author already runs. The command line serves either as a catalog
whose one principal is the local owner (:data:`LOCAL_PRINCIPAL`), granted ``write`` on every
module: whoever runs ``mycelium`` owns the code it loads. Every other principal is granted
nothing. Modules run on an :class:`~mycelium.sandbox.isolated.IsolatedSandbox`, so that no
guest value is converted in the serving process. A runtime lends its modules, sandbox,
execution options and semantic ranker; its ``access`` does not apply (the command decides
who is asked, as for any catalog).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._modules import Module
from .._runtime import Runtime
from ..mcp import Load, McpAuthority, McpCatalog, Member, Principal, create_mcp_catalog
from ..sandbox.isolated import IsolatedSandbox

__all__ = ["LOCAL_PRINCIPAL", "owned_catalog"]

LOCAL_PRINCIPAL = Member("local", "owner")
"""Who the served catalog's caller is: the token holder over HTTP, the launching client over stdio."""


def owned_catalog(value: object, where: str) -> McpCatalog | None:
    """The owner's catalog of a module, a list of modules or a runtime; ``None`` for anything else.

    Raises :class:`ValueError` naming ``where`` for a runtime whose capability sources make
    modules the owner could not be granted in advance.
    """
    if isinstance(value, Module):
        value = [value]
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        if not all(isinstance(item, Module) for item in value):
            return None
        modules = list(value)
        return create_mcp_catalog(load=_owner_load(modules), sandbox=IsolatedSandbox())
    if not isinstance(value, Runtime):
        return None
    if value.sources:
        raise ValueError(
            f"{where} is a Runtime with capability sources, whose modules no grant names in advance; "
            "serve it with mycelium.mcp.create_mcp_catalog and a load() that grants them"
        )
    return create_mcp_catalog(
        load=_owner_load(list(value.modules)),
        sandbox=value.sandbox,
        execution=value.options,
        semantic=value.semantic,
    )


def _owner_load(modules: list[Module]) -> Load:
    owner = McpAuthority(grants={module.id: "write" for module in modules}, sources=modules)
    nobody = McpAuthority(grants={})

    def load(principal: Principal) -> McpAuthority:
        return owner if principal == LOCAL_PRINCIPAL else nobody

    return load

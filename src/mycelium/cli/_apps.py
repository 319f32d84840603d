"""Loading ``APP``: from ``module:attribute`` or ``path/to/app.py:attribute`` to a catalog.

Every verb starts here, and an ``APP`` that cannot be served is an :class:`AppError`: a
short message for the person who typed it, never a traceback, and exit code
:attr:`~._exits.ExitCode.BAD_USAGE`. An exception the app's code raised names the app's own
line (see :mod:`._app_exceptions`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..mcp import Authenticate, McpCatalogProvider
from ._app_exceptions import describe_raised
from ._owned import owned_catalog

DEFAULT_ATTRIBUTE = "create_catalog"
"""The attribute ``mycelium serve`` looks for when ``APP`` names none."""


class AppError(Exception):
    """``APP`` cannot be served; the message says why, for the person who typed it."""


@dataclass(frozen=True)
class AppSpec:
    """A parsed ``APP``: a module name or a ``.py`` file, and a (dotted) attribute."""

    module: str | None
    file: Path | None
    attribute: str

    def __str__(self) -> str:
        return f"{self.file if self.file is not None else self.module}:{self.attribute}"

    def home(self) -> Path | None:
        """The folder of the app's own files: the file's folder, or its top-level package's (``None`` if unknown)."""
        if self.file is not None:
            return self.file.resolve().parent
        assert self.module is not None
        try:
            # A top-level name is only looked up, never run, by find_spec.
            found = importlib.util.find_spec(self.module.partition(".")[0])
        except (ImportError, ValueError):
            return None
        if found is None:
            return None
        if found.submodule_search_locations:
            return Path(next(iter(found.submodule_search_locations))).resolve()
        if found.origin is not None and found.has_location:
            return Path(found.origin).resolve().parent
        return None


def parse_app(app: str) -> AppSpec:
    """Parse ``module:attribute``, ``path.py:attribute``, ``path.py`` or ``module``.

    A target ending in ``.py`` or containing a path separator is a file; anything else a
    module name. The attribute defaults to :data:`DEFAULT_ATTRIBUTE`.
    """
    target, colon, attribute = app.rpartition(":")
    if not colon:
        target, attribute = app, DEFAULT_ATTRIBUTE
    if not target:
        raise AppError(f"APP {app!r} names no module or file; expected module:attribute or path.py:attribute")
    if not attribute or not all(part.isidentifier() for part in attribute.split(".")):
        raise AppError(f"APP {app!r}: {attribute!r} is not an attribute name")
    if target.endswith(".py") or "/" in target or os.sep in target:
        return AppSpec(module=None, file=Path(target), attribute=attribute)
    if not all(part.isidentifier() for part in target.split(".")):
        raise AppError(f"APP {app!r}: {target!r} is neither a module name nor a .py file")
    return AppSpec(module=target, file=None, attribute=attribute)


async def load_catalog(app: str) -> McpCatalogProvider:
    """Import ``APP`` and return its catalog, calling (and awaiting) a factory. Raises :class:`AppError`."""
    spec = parse_app(app)
    return await resolve_catalog(_attribute(spec, _import(spec)), str(spec), home=spec.home)


def load_approver_authenticate(text: str) -> Authenticate:
    """The function ``module:attribute`` or ``path.py:attribute`` names, for ``serve --approver-auth``.

    A file the APP already loaded is not run again: its module is reused, so the function sees
    the same objects as the catalog. Raises :class:`AppError`.
    """
    if ":" not in text:
        raise AppError(f"--approver-auth {text!r} names no function; expected module:attribute or path.py:attribute")
    spec = parse_app(text)
    value = _attribute(spec, _import(spec, reuse=True))
    if not callable(value):
        raise AppError(f"--approver-auth {spec} is a {type(value).__name__}, not a function taking the HTTP request")
    return cast(Authenticate, value)  # what it returns is checked on every request (mycelium.mcp admit)


def _attribute(spec: AppSpec, module: object) -> object:
    value = module
    walked: list[str] = []
    for part in spec.attribute.split("."):
        walked.append(part)
        try:
            value = getattr(value, part)
        except AttributeError:
            target = spec.file if spec.file is not None else spec.module
            raise AppError(f"{target} has no attribute {'.'.join(walked)!r}") from None
    return value


async def resolve_catalog(
    value: object, where: str, *, home: Callable[[], Path | None] = lambda: None
) -> McpCatalogProvider:
    """``value`` itself if it is a catalog, else the catalog its zero-argument factory returns.

    ``home`` finds the folder of the app's own files, should the factory raise.

    A catalog is an :class:`~mycelium.mcp.McpCatalog` (from ``create_mcp_catalog``) or any
    other :class:`~mycelium.mcp.McpCatalogProvider`. A module, a list of modules or a
    runtime (or a factory returning one) is served to the local owner alone (see ``_owned``).
    """
    if _is_catalog(value):
        assert isinstance(value, McpCatalogProvider)
        return value
    owned = _owned(value, where)
    if owned is not None:
        return owned
    if not callable(value):
        raise AppError(f"{where} is a {type(value).__name__}, {_EXPECTED}")
    try:
        inspect.signature(value).bind()
    except TypeError:
        raise AppError(f"{where} must be callable with no arguments to make the catalog") from None
    except ValueError:
        pass  # a builtin without a signature: just call it
    try:
        made: Any = value()
        if inspect.isawaitable(made):
            made = await made
    except Exception as exc:
        raise AppError(f"calling {where} raised {describe_raised(exc, home())}") from exc
    if _is_catalog(made):
        assert isinstance(made, McpCatalogProvider)
        return made
    owned = _owned(made, f"what {where} returned")
    if owned is not None:
        return owned
    closer = getattr(made, "aclose", None)
    if callable(closer):
        with contextlib.suppress(Exception):
            await closer()
    raise AppError(f"{where} returned a {type(made).__name__}, {_EXPECTED}")


_EXPECTED = (
    "not a Module, a list of modules, a Runtime, an McpCatalog or a factory returning one "
    "(make a catalog with mycelium.mcp.create_mcp_catalog)"
)


def _owned(value: object, where: str) -> McpCatalogProvider | None:
    try:
        return owned_catalog(value, where)
    except ValueError as exc:
        raise AppError(str(exc)) from None


def _import(spec: AppSpec, *, reuse: bool = False) -> object:
    if spec.file is not None:
        path = spec.file.resolve()
        if not path.is_file():
            raise AppError(f"no such file: {spec.file}")
        loaded = [module for module in list(sys.modules.values()) if getattr(module, "__file__", None) == str(path)]
        if reuse and loaded:
            return loaded[-1]
        # The file's module name is its stem, unless that would replace a module already loaded.
        name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else f"_mycelium_app_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise AppError(f"cannot load {spec.file} as a Python module")
        module = importlib.util.module_from_spec(loader_spec)
        # Like `python app.py`: the file's folder comes first, so it can import its neighbours;
        # and the module is registered before it runs, so pydantic can resolve its annotations.
        sys.path.insert(0, str(path.parent))
        sys.modules[name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise AppError(f"loading {spec.file} raised {describe_raised(exc, spec.home())}") from exc
        return module
    assert spec.module is not None
    if "" not in sys.path and os.getcwd() not in sys.path:
        # The `mycelium` script's own folder is sys.path[0], not the current one.
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(spec.module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (spec.module == exc.name or spec.module.startswith(exc.name + ".")):
            raise AppError(f"no module named {exc.name!r} (APP {spec})") from exc
        raise AppError(f"importing {spec.module} raised {describe_raised(exc, spec.home())}") from exc
    except Exception as exc:
        raise AppError(f"importing {spec.module} raised {describe_raised(exc, spec.home())}") from exc


def _is_catalog(value: object) -> bool:
    # A class satisfies the protocol's attribute check too; only an instance is a catalog.
    return isinstance(value, McpCatalogProvider) and not isinstance(value, type)

"""Which distribution this package is, and a refusal to run beside another that claims ``mycelium``.

This library is published as ``mycelium-codemode`` and imported as ``mycelium``. Other
projects on PyPI ship a top-level ``mycelium`` package too (``mycelium-runtime``, ``mycelium``
and others): installed in one environment, the two overwrite each other's files and fail
later in ways that name neither. Importing this package refuses at once instead, naming the
other distribution and what to do. (When the other one was installed last, its own
``mycelium/__init__.py`` is what Python imports, and this check never runs: uninstall it.)
"""

from __future__ import annotations

import importlib.metadata
import re

__all__ = ["DISTRIBUTION", "VERSION", "check_installation", "installed_version"]

DISTRIBUTION = "mycelium-codemode"
"""The name to ``pip install``; the import name is ``mycelium``."""

_PACKAGE = "mycelium"


def installed_version() -> str:
    """This distribution's installed version, or ``"0"`` when it runs from a checkout without being installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0"


def check_installation() -> None:
    """Raise ``ImportError`` when another installed distribution also ships a top-level ``mycelium``.

    Reads each distribution's ``top_level.txt``, or its ``RECORD`` when it has none (wheels
    built by hatchling or flit): a few milliseconds for a hundred distributions.
    """
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"] or ""
        if _normalized(name) == DISTRIBUTION:
            continue
        if _claims_package(distribution):
            version = distribution.version
            raise ImportError(
                f"the distribution {name} {version} is installed too, and it also installs a top-level "
                f"package named {_PACKAGE!r}: the two overwrite each other's files. This is {DISTRIBUTION}. "
                f"Uninstall the other one (pip uninstall {name}), then reinstall this one "
                f"(pip install --force-reinstall {DISTRIBUTION}, or the path of its checkout in place of the name)."
            )


def _claims_package(distribution: importlib.metadata.Distribution) -> bool:
    top_level = distribution.read_text("top_level.txt")
    if top_level is not None:
        return _PACKAGE in top_level.split()
    record = distribution.read_text("RECORD") or ""
    return record.startswith(f"{_PACKAGE}/") or f"\n{_PACKAGE}/" in record


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# The package imports this module before anything else, so a clash is named before it breaks anything.
check_installation()

VERSION = installed_version()
"""The installed version of ``mycelium-codemode`` (``"0"`` when run from a checkout without installing it)."""

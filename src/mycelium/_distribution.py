"""Which distribution this package is, and a refusal to run beside another that claims ``mycelium``.

This library is published as ``mycelium-codemode`` and imported as ``mycelium``. Other
projects on PyPI ship a top-level ``mycelium`` package too (``mycelium-runtime``, ``mycelium``
and others): installed in one environment, the two overwrite each other's files and fail
later in ways that name neither. Importing this package refuses at once instead, naming the
other distribution and what to do. (When the other one was installed last, its own
``mycelium/__init__.py`` is what Python imports, and this check never runs: uninstall it.)
"""

from __future__ import annotations

import csv
import importlib.metadata
import re
from collections.abc import Iterator

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

    Reads each distribution's ``top_level.txt`` and its list of installed files (``RECORD``,
    or ``installed-files.txt`` for an egg): a few milliseconds for a hundred distributions.
    A distribution whose metadata cannot be read (not UTF-8, say) is passed over: this
    check names one problem, and must not become another.
    """
    for distribution in importlib.metadata.distributions():
        try:
            name = distribution.metadata["Name"] or ""
            if _normalized(name) == DISTRIBUTION or not _claims_package(distribution):
                continue
        except (UnicodeDecodeError, OSError, csv.Error):
            continue
        who = f"{name} {distribution.version}" if name else f"in {_folder(distribution)} (its metadata has no name)"
        raise ImportError(
            f"the distribution {who} is installed too, and it also installs a top-level "
            f"package named {_PACKAGE!r}: the two overwrite each other's files. This is {DISTRIBUTION}. "
            f"Uninstall the other one (pip uninstall {name or '<its name>'}), then reinstall this one "
            f"(pip install --force-reinstall {DISTRIBUTION}, or the path of its checkout in place of the name)."
        )


def _claims_package(distribution: importlib.metadata.Distribution) -> bool:
    top_level = distribution.read_text("top_level.txt") or ""
    if _PACKAGE in top_level.split():
        return True
    # An egg lists its files relative to its own folder; a wheel's RECORD is CSV, paths first.
    for listing, prefix in (("RECORD", ""), ("installed-files.txt", "../")):
        text = distribution.read_text(listing) or ""
        if f"{_PACKAGE}/" in text and any(_in_package(path, prefix) for path in _paths(text)):
            return True
    return False


def _paths(listing: str) -> Iterator[str]:
    for row in csv.reader(listing.splitlines()):
        if row:
            yield row[0]


def _in_package(path: str, prefix: str) -> bool:
    return path.replace("\\", "/").removeprefix(prefix).startswith(f"{_PACKAGE}/")


def _folder(distribution: importlib.metadata.Distribution) -> str:
    """Where the distribution's metadata is, as its own file list names it (a ``.dist-info`` folder)."""
    for path in _paths(distribution.read_text("RECORD") or ""):
        folder, _, file = path.rpartition("/")
        if file == "RECORD":
            return folder
    return "an unnamed distribution's folder"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# The package imports this module before anything else, so a clash is named before it breaks anything.
check_installation()

VERSION = installed_version()
"""The installed version of ``mycelium-codemode`` (``"0"`` when run from a checkout without installing it)."""

"""The held-out search set: a catalog modelled on public APIs and queries written blind against it.

Two halves, each written by someone who had not read how the engine ranks and before any
engine ran on it: :mod:`heldout_a` (work tracking, documents, support, devops) and
:mod:`heldout_b` (commerce, payments, messaging, meetings, CRM, data and cloud). Measure
on it; never tune against it.
"""

from __future__ import annotations

from heldout_a import QUERIES_A, heldout_catalog_a
from heldout_b import QUERIES_B, heldout_catalog_b

from mycelium import Module

__all__ = ["HELDOUT_QUERIES", "heldout_catalog"]

HELDOUT_QUERIES = (*QUERIES_A, *QUERIES_B)


def heldout_catalog() -> list[Module]:
    """Both halves' operations (over 200)."""
    return [*heldout_catalog_a(), *heldout_catalog_b()]

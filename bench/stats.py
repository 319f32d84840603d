"""Order statistics shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The sample at ``fraction`` (0..1) of the sorted samples (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]

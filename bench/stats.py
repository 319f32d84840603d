"""Order statistics and small helpers shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from mycelium import Lease


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The sample at ``fraction`` (0..1) of the sorted samples (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def executing(lease: Lease, code: str) -> Callable[[], Awaitable[object]]:
    """A timed call: ``code`` run by ``lease``'s execute tool, which stops the bench if it fails."""

    async def run() -> object:
        result = await lease.execute_tool.run(code, tool_call_id="bench")
        if result.is_error:
            raise SystemExit(f"execute failed: {result.text}")
        return result

    return run

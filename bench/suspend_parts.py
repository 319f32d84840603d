"""Where one suspend and one resume on SQLite spend their time: the wall time of each part, medians.

The same program and runtimes as ``bench/suspend.py`` (10 calls, then a ``confirm=True`` call
a runtime with ``Access(confirm=defer)`` pauses at), SQLite in a temp folder. Four scenarios,
interleaved per round: (a) the program approved at once without suspensions, (b) approved at
once with suspensions (a run that may pause), a suspend and its resume. Each part is timed by
wrapping the method that does it, so a part inside another is counted in both (the store's
``put`` inside the desk's ``keep``, the Monty drive inside the sandbox's run); the rest of a
scenario's total is the runtime's own (lease, executor, result).

    .venv/bin/python bench/suspend_parts.py               # 300 rounds, about 10 s
    .venv/bin/python bench/suspend_parts.py --rounds 100
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import suspend as scenario

from mycelium import Access, Runtime, SharedSandbox, SqliteSuspensions, Suspensions, defer
from mycelium._execute._executor import Executor
from mycelium._execute._supervisor import Supervisor
from mycelium.sandbox.monty import MontySandbox
from mycelium.sandbox.monty._fed_pause import _FedPause
from mycelium.sandbox.monty._sandbox import MontySandbox as Adapter
from mycelium.sandbox.monty._stepping import _Stepper
from mycelium.suspensions._desk import SuspensionDesk
from mycelium.suspensions._suspensions import Suspensions as Seal

WARMUP = 20
PARTS: dict[str, tuple[type, str]] = {
    "supervisor: the run, its slot and deadline": (Supervisor, "supervise"),
    "sandbox: checkout to the end": (Adapter, "_run"),
    "fed pause: session.dump() in the call": (_FedPause, "_captured"),
    "stepper: the resumed part, load included": (_Stepper, "drive"),
    "stepper: restore (load, the call placed again)": (_Stepper, "_restore"),
    "desk: replay lookup (find + unseal)": (SuspensionDesk, "replayed"),
    "desk: keep (seal + put)": (SuspensionDesk, "keep"),
    "desk: resumable (get + unseal + checks)": (SuspensionDesk, "resumable"),
    "desk: claim": (SuspensionDesk, "claim"),
    "executor: keep the pause": (Executor, "_keep"),
    "store: find": (SqliteSuspensions, "find"),
    "store: put": (SqliteSuspensions, "put"),
    "store: get": (SqliteSuspensions, "get"),
    "store: claim": (SqliteSuspensions, "claim"),
    "seal": (Seal, "seal"),
    "unseal": (Seal, "unseal"),
}
spent: defaultdict[str, float] = defaultdict(float)  # ms per part in the scenario being timed


def timing(label: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await method(*args, **kwargs)
        finally:
            spent[label] += (time.perf_counter() - started) * 1000

    return timed


async def main(rounds: int) -> None:
    for label, (owner, name) in PARTS.items():
        setattr(owner, name, timing(label, getattr(owner, name)))
    samples: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
    sandbox = SharedSandbox(MontySandbox())
    with tempfile.TemporaryDirectory(prefix="mycelium-bench-parts-") as folder:
        store = SqliteSuspensions(Path(folder) / "suspensions.db")
        kept = Suspensions(store=store, key=scenario.KEY, max_per_session=scenario.MAX_HELD)

        def runtime(access: Access, suspensions: Suspensions | None) -> Runtime:
            return Runtime(modules=[scenario.shop_module()], sandbox=sandbox, access=access, suspensions=suspensions)

        approve = Access(confirm=scenario.approve)
        async with (
            runtime(Access(confirm=defer), kept) as pausing,
            runtime(approve, kept) as may,
            runtime(approve, None) as plain,
            pausing.lease() as pausing_lease,
            may.lease() as may_lease,
            plain.lease() as plain_lease,
        ):
            shop = scenario.Store("sqlite", kept, pausing, pausing_lease, may_lease)
            suspension_id = ""

            async def suspend() -> None:
                nonlocal suspension_id
                suspension_id = await shop.suspend()

            steps: dict[str, Callable[[], Awaitable[None]]] = {
                "(a) fed, no suspensions": lambda: scenario.floor_run(plain_lease),
                "(b) may pause, approved": shop.approved,
                "suspend": suspend,
                "resume": lambda: shop.resume(suspension_id),
            }
            for round_number in range(WARMUP + rounds):
                for step, work in steps.items():
                    spent.clear()
                    started = time.perf_counter()
                    await work()
                    if round_number >= WARMUP:
                        samples[(step, "total")].append((time.perf_counter() - started) * 1000)
                        for label, ms in spent.items():
                            samples[(step, label)].append(ms)
        await store.aclose()
    await sandbox.aclose()
    print(f"median ms over {rounds} rounds (SQLite); parts inside other parts are counted in both")
    for step in steps:
        parts = sorted(
            ((label, statistics.median(values)) for (name, label), values in samples.items() if name == step),
            key=lambda item: (item[0] != "total", -item[1]),
        )
        for label, ms in parts:
            print(f"{step:<26} {label:<44} {ms:7.3f}")
    both = [s + r for s, r in zip(samples[("suspend", "total")], samples[("resume", "total")], strict=True)]
    print(f"{'suspend + resume':<26} {'total':<44} {statistics.median(both):7.3f}")
    await asyncio.sleep(0.05)  # let Monty's threads finish before the loop ends


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300, help="rounds after the warm-up (default 300)")
    asyncio.run(main(parser.parse_args().rounds))

"""One replica against three behind nginx: requests per second and latency of 2026-07-28 executes.

The deployment the tests run (``tests/deployment``): ``mycelium serve`` replicas of the shared
notes app, one PostgreSQL (pgserver, in a temp folder) as their ``--store``, nginx from Debian's
packages configured from ``tests/deployment/nginx.conf.template``. Three lanes, measured in the
same run: one replica reached directly, one behind nginx (the proxy's own cost), three behind
nginx. Each client sends raw 2026-07-28 ``tools/call`` requests of one program (one read of
the shared notes) back to back; ``--concurrency`` clients at once for ``--seconds`` a lane.

    .venv/bin/python bench/replicas.py                 # about 60 s on the 2-core build machine
    .venv/bin/python bench/replicas.py --seconds 3 --concurrency 4

Replicas on one machine share its cores: on 2 cores three replicas cannot serve more than one,
and the figure that grows with machines is the per-replica one. The bench reports; it exits 0
unless a request fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from stats import percentile
from suspend import postgres

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the deployment harness lives in tests/

from tests.deployment.conftest import TOKEN, deployed, find_nginx
from tests.mcp import raw_http as raw

PROGRAM = "return await notes.count(text='bench')"


class Failed(Exception):
    """A request of the bench did not answer as a successful execute."""


async def client(http: httpx2.AsyncClient, url: str, until: float, took: list[float]) -> None:
    body = raw.modern_call(PROGRAM)
    while time.perf_counter() < until:
        started = time.perf_counter()
        answer = await raw.send(http, "POST", url, sent=raw.modern_headers(TOKEN), body=body)
        took.append((time.perf_counter() - started) * 1000)
        if answer.status != 200 or answer.result().get("isError") is not False:
            raise Failed(f"{answer.status}: {answer.text[:200]}")


async def lane(url: str, concurrency: int, seconds: float) -> tuple[float, list[float]]:
    """Requests per second and every request's latency (ms) at ``concurrency`` for ``seconds``."""
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as http:
        warm_until = time.perf_counter() + min(1.0, seconds / 3)
        await asyncio.gather(*(client(http, url, warm_until, []) for _ in range(concurrency)))
        took: list[float] = []
        started = time.perf_counter()
        await asyncio.gather(*(client(http, url, started + seconds, took) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return len(took) / elapsed, took


async def main(arguments: argparse.Namespace) -> None:
    nginx = find_nginx()
    results: dict[str, tuple[float, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mycelium-replicas-") as scratch:
        folder = Path(scratch)
        async with postgres(folder / "postgres") as uri:
            for replicas in (1, 3):
                with deployed(uri, folder / f"deployment-{replicas}", nginx, replicas=replicas) as deployment:
                    if replicas == 1:
                        direct = deployment.replicas[0].url
                        results["1 replica, direct"] = await lane(direct, arguments.concurrency, arguments.seconds)
                    label = f"{replicas} replica{'s' if replicas > 1 else ''} behind nginx"
                    results[label] = await lane(deployment.url, arguments.concurrency, arguments.seconds)
    print(
        f"2026-07-28 executes ({PROGRAM!r}), {arguments.concurrency} clients, {arguments.seconds:g} s a lane, "
        f"{os.cpu_count()} cores, PostgreSQL store"
    )
    print(f"{'lane':<26} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'vs direct':>10}")
    base = results["1 replica, direct"][0]
    for label, (rate, took) in results.items():
        p50, p99 = statistics.median(took), percentile(took, 0.99)
        print(f"{label:<26} {rate:8.1f} {p50:8.2f} {p99:8.2f} {rate / base:9.2f}x")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="How long each lane runs (10).")
    parser.add_argument("--concurrency", type=int, default=16, help="Clients sending at once (16).")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()

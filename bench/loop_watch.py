"""What holds a server's event loop: a 1 ms ticker's gaps, the garbage collector's pauses by generation,
and (a diagnostic) the loop thread's stack while it is held. Used in ``bench/mcp.py``'s server children."""

from __future__ import annotations

import asyncio
import collections
import gc
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

TICK_SECONDS = 0.001
STALL_BUCKET_MS = 0.1  # resolution of the stall histogram (a list of every gap would itself grow RSS)
STALL_BUCKETS = 10_000  # up to 1 s; longer gaps land in the last bucket and in the max
GENERATIONS = 3


@dataclass
class Collections:
    """The collections of one generation: how many, the longest one's CPU time, and all of their CPU time (ms)."""

    count: int = 0
    longest_cpu: float = 0.0
    total_cpu: float = 0.0


class LoopWatch:
    """Ticks every millisecond; keeps the largest gap between ticks and a histogram of gaps.

    A gap is the time from one tick's sleep to the next wake-up, so an idle loop shows about
    1 ms and a loop held by some callback shows that callback's duration on top. On a busy
    machine a gap also holds time the process was not scheduled at all, so each gap's CPU
    time of the loop's thread is kept too: a gap mostly spent on that CPU is the loop held
    by the server's own work. Every garbage collection is timed too (``gc.callbacks``), by
    generation: it holds the interpreter lock, so the loop waits for it. Only fixed counters
    and a histogram are kept, so watching costs the process no memory as it runs.
    """

    def __init__(self) -> None:
        self._tick = time.perf_counter()
        self._cpu = time.thread_time()
        self._process_cpu = time.process_time()
        self._collecting = self._collecting_cpu = 0.0
        self.reset()
        gc.callbacks.append(self._collection)

    def reset(self) -> None:
        self.worst = 0.0
        self.worst_cpu = 0.0  # the loop thread's CPU time within the worst gap
        self.worst_process_cpu = 0.0  # the whole process's: beyond the loop's, its other threads held the GIL
        self.most_cpu = 0.0  # the most loop-thread CPU time within any one gap
        self.gc_worst = 0.0  # the longest garbage collection (it holds the GIL, so the loop too)
        self.gc_worst_cpu = 0.0  # the longest collection's CPU time (its wall time counts waiting for a core)
        self.gc_generation = -1
        self.gc_by_generation = [Collections() for _ in range(GENERATIONS)]
        self.buckets = [0] * (STALL_BUCKETS + 1)
        self._tick = time.perf_counter()
        self._cpu = time.thread_time()
        self._process_cpu = time.process_time()

    @property
    def gc_count(self) -> int:
        return sum(each.count for each in self.gc_by_generation)

    @property
    def gc_total_cpu(self) -> float:
        return sum(each.total_cpu for each in self.gc_by_generation)

    @property
    def gc_most_cpu(self) -> float:
        """The most CPU time any one collection took (ms)."""
        return max(each.longest_cpu for each in self.gc_by_generation)

    def _collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting, self._collecting_cpu = time.perf_counter(), time.thread_time()
            return
        pause = (time.perf_counter() - self._collecting) * 1000
        cpu = (time.thread_time() - self._collecting_cpu) * 1000
        generation = self.gc_by_generation[info["generation"]]
        generation.count += 1
        generation.total_cpu += cpu
        generation.longest_cpu = max(generation.longest_cpu, cpu)
        if pause > self.gc_worst:
            self.gc_worst, self.gc_worst_cpu, self.gc_generation = pause, cpu, info["generation"]

    @property
    def ticked(self) -> float:
        """When the ticker last went to sleep (``perf_counter``)."""
        return self._tick

    def percentile(self, fraction: float) -> float:
        total = sum(self.buckets)
        wanted, seen = fraction * total, 0
        for index, count in enumerate(self.buckets):
            seen += count
            if count and seen >= wanted:
                return (index + 1) * STALL_BUCKET_MS
        return 0.0

    async def run(self) -> None:
        while True:
            self._tick, self._cpu, self._process_cpu = time.perf_counter(), time.thread_time(), time.process_time()
            await asyncio.sleep(TICK_SECONDS)
            gap = (time.perf_counter() - self._tick) * 1000
            cpu = (time.thread_time() - self._cpu) * 1000
            if gap > self.worst:
                self.worst, self.worst_cpu = gap, cpu
                self.worst_process_cpu = (time.process_time() - self._process_cpu) * 1000
            self.most_cpu = max(self.most_cpu, cpu)
            self.buckets[min(int(gap / STALL_BUCKET_MS), STALL_BUCKETS)] += 1


class StallStacks:
    """A diagnostic: samples the loop thread's stack while the loop has not ticked for ``threshold_ms``.

    A sampling thread looks every 2 ms; it gets the GIL only between the loop thread's
    bytecodes, so a stall inside one long C call (a garbage collection, say) shows the
    frame that made the call, or nothing.
    """

    def __init__(self, watch: LoopWatch, threshold_ms: float) -> None:
        self.counts: collections.Counter[tuple[str, ...]] = collections.Counter()
        self._watch = watch
        self._threshold = threshold_ms / 1000 + TICK_SECONDS
        self._loop_thread = threading.get_ident()

    def start(self) -> None:
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            time.sleep(0.002)
            if time.perf_counter() - self._watch.ticked < self._threshold:
                continue
            frame = sys._current_frames().get(self._loop_thread)
            stack: list[str] = []
            while frame is not None and len(stack) < 14:
                stack.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}")
                frame = frame.f_back
            self.counts[tuple(stack)] += 1

    def top(self, count: int) -> list[tuple[int, list[str]]]:
        return [(samples, list(stack)) for stack, samples in self.counts.most_common(count)]

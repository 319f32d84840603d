"""Host-only execution options, and the admission policy they resolve to.

Guests submit only code; nothing here is guest-widenable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "MAX_ADMISSION_WAIT_MS",
    "AdmissionPolicy",
    "ExecutionOptions",
    "available_cores",
    "check_int",
    "check_optional",
]

MAX_ADMISSION_WAIT_MS = 900_000
MIN_DERIVED_CAPACITY = 2
MAX_DERIVED_CAPACITY = 32


def check_int(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int in range, else raise ``ValueError`` naming ``name``."""
    if type(value) is not int or value < minimum or (maximum is not None and value > maximum):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"of at least {minimum}"
        raise ValueError(f"{name} must be an int {bounds}, got {value!r}")
    return value


def check_optional(name: str, value: object, kind: type, what: str) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is ``None`` or a ``kind`` (``what``: "a Session")."""
    if value is not None and not isinstance(value, kind):
        raise ValueError(f"{name} must be {what} or None, got {type(value).__name__}")


@dataclass(frozen=True)
class ExecutionOptions:
    """Limits for each execute, validated when constructed.

    - ``timeout_ms``: the whole run's budget, from the moment execute is called: queueing for
      a sandbox slot and time spent in host calls count too.
    - ``abort_grace_ms``: after aborting (deadline or caller), how long to wait for the sandbox
      to settle before reporting the stop as unacknowledged.
    - ``max_code_bytes``: the submitted program's size (UTF-8).
    - ``max_result_bytes``: the compact JSON of the result; a larger result fails, never truncated.
    - ``max_operation_input_bytes``: the compact JSON of one operation call's input from a guest;
      a larger one fails in the guest as a ``ValueError`` before the call is placed.
    - ``max_inflight_input_bytes``: the input of all of one run's operation calls still running,
      together: a guest cannot make the host hold more than this by calling concurrently.
    - ``sandbox_capacity``: how many sandbox runs may be in flight runtime-wide; ``None`` derives it
      from the available cores (clamped to 2..32). An explicit value is used as given.
    - ``admission_wait_ms``: how long a run may queue for a slot (1..900,000); ``None`` means the
      run's whole ``timeout_ms`` budget. Always bounded by the run's deadline.
    """

    timeout_ms: int = 180_000
    abort_grace_ms: int = 2_000
    max_code_bytes: int = 64 * 1024
    max_result_bytes: int = 64 * 1024
    max_operation_input_bytes: int = 1024 * 1024
    max_inflight_input_bytes: int = 16 * 1024 * 1024
    sandbox_capacity: int | None = None
    admission_wait_ms: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "timeout_ms",
            "abort_grace_ms",
            "max_code_bytes",
            "max_result_bytes",
            "max_operation_input_bytes",
            "max_inflight_input_bytes",
        ):
            check_int(f"ExecutionOptions.{name}", getattr(self, name))
        if self.sandbox_capacity is not None:
            check_int("ExecutionOptions.sandbox_capacity", self.sandbox_capacity)
        if self.admission_wait_ms is not None:
            check_int("ExecutionOptions.admission_wait_ms", self.admission_wait_ms, maximum=MAX_ADMISSION_WAIT_MS)


@dataclass(frozen=True)
class AdmissionPolicy:
    """Resolved admission facts: the slot count and how long a run may queue for one."""

    capacity: int
    admission_wait_ms: int

    @classmethod
    def resolve(cls, options: ExecutionOptions, available_cores: int | None = None) -> AdmissionPolicy:
        """Validate and resolve the admission options. Reserves nothing and starts nothing.

        An explicit ``sandbox_capacity`` is used as given (not clamped); without one, the
        capacity is ``available_cores`` clamped to 2..32, or 2 when it is ``None``. Without an
        ``admission_wait_ms``, a run may queue for its whole ``timeout_ms``.
        """
        if options.sandbox_capacity is not None:
            capacity = check_int("sandbox_capacity", options.sandbox_capacity)
        elif available_cores is None:
            capacity = MIN_DERIVED_CAPACITY
        else:
            cores = check_int("available_cores", available_cores)
            capacity = min(max(cores, MIN_DERIVED_CAPACITY), MAX_DERIVED_CAPACITY)
        if options.admission_wait_ms is not None:
            wait = check_int("admission_wait_ms", options.admission_wait_ms, maximum=MAX_ADMISSION_WAIT_MS)
        else:
            wait = check_int("timeout_ms", options.timeout_ms)
        return cls(capacity=capacity, admission_wait_ms=wait)


def available_cores() -> int | None:
    """The cores this process may run on (affinity-aware), or ``None`` when that cannot be observed."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()

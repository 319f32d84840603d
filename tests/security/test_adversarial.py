"""Adversarial guest programs against a real Runtime over a real MontySandbox.

Each test runs hostile model-style code and asserts two things: the outcome is a typed
failure (or a harmless value), and the host is unharmed. The ``host`` fixture adds the
checks every test shares: no planted secret and no host detail in any result, and on
teardown the same runtime still runs an ordinary program, closes, and leaves no worker
process or asyncio task behind.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mycelium.failures import CapabilityFailed, DeadlineExceeded, ResultTooLarge, SyntaxFailure

from .conftest import (
    GUEST_MEMORY_LIMIT,
    MAX_OPERATION_CALLS,
    MAX_PRINT_BYTES,
    MAX_SLEEP_MS,
    MAX_TOTAL_SLEEP_MS,
    MIB,
    ORDINARY_PROGRAM,
    ORDINARY_TEXT,
    QUICK_BOUND_S,
    STOP_BOUND_S,
    TIMEOUT_MS,
    Host,
    Outcome,
    assert_guest_exception,
    child_pids,
    loop_gaps,
)

THIS_FILE = str(Path(__file__).resolve())


def entries(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


def write(path: Path, text: str) -> None:
    path.write_text(text)


def read(path: Path) -> str:
    return path.read_text()


def process_environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as environ:
        return environ.read()


def assert_stopped_at_deadline(outcome: Outcome) -> None:
    failure = outcome.result.failure
    assert isinstance(failure, DeadlineExceeded), outcome.result.text
    assert failure.timeout_ms == TIMEOUT_MS
    assert failure.acknowledged is True, "the worker should be killed within the grace"
    assert "did not finish" in outcome.result.text
    assert TIMEOUT_MS / 1000 * 0.9 <= outcome.elapsed < STOP_BOUND_S


def assert_dropped_output_is_reported(logs: tuple[str, ...]) -> None:
    kept = sum(len(line.encode()) for line in logs[:-1])
    assert kept <= MAX_PRINT_BYTES
    assert "dropped" in logs[-1]
    assert len(logs[-1]) < 200


# --- CPU: runaway computation ends at the deadline --------------------------------------

CPU_BURNERS = {
    "while-true-pass": "while True: pass",
    # Powers, one after another: a single one may finish inside the deadline on a quick core (and then
    # be refused as too large a result), which made this test depend on the machine's speed.
    "huge-power": "while True:\n    7**10_000_000",
    "huge-factorial": "import math\nmath.factorial(10**7)",
    "exec-while-true": "exec('while True: pass')",
    "swallows-its-own-timeout": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    ),
    "swallows-recursion-error": "def f():\n    try:\n        f()\n    except RecursionError:\n        f()\nf()",
}


@pytest.mark.parametrize("code", CPU_BURNERS.values(), ids=CPU_BURNERS.keys())
async def test_runaway_computation_is_stopped_at_the_deadline_and_the_host_is_unharmed(host: Host, code: str) -> None:
    assert_stopped_at_deadline(await host.run(code))


async def test_infinite_loop_is_stopped_at_the_deadline_without_blocking_the_host_event_loop(host: Host) -> None:
    async with loop_gaps(0.01) as gaps:
        outcome = await host.run("while True: pass")
    assert_stopped_at_deadline(outcome)
    assert len(gaps) > 50
    assert max(gaps) < 0.5, "a guest's CPU loop must run in the worker, not on the host's event loop"


async def test_hostile_program_does_not_delay_an_ordinary_one_running_beside_it(host: Host) -> None:
    runtime = await host.open(sandbox_capacity=4, pool_size=4)
    hostile: list[Outcome] = []

    async def attack() -> None:
        hostile.append(await host.run("while True: pass", runtime))

    async with anyio.create_task_group() as group:
        group.start_soon(attack)
        await anyio.sleep(0.2)
        ordinary = await host.run(ORDINARY_PROGRAM, runtime)
        assert ordinary.result.text == ORDINARY_TEXT
        assert ordinary.elapsed < 1.0
    assert_stopped_at_deadline(hostile[0])


# --- Memory -----------------------------------------------------------------------------

MEMORY_BOMBS = {
    "string-times-ten-billion": "'a' * 10**10",
    "list-growth": "x = []\nwhile True:\n    x.append('a' * 1000)",
    "string-doubling": "s = 'a'\nwhile True:\n    s += s",
    "list-times-a-billion": "[0] * 10**9",
    "dict-comprehension": "{i: i for i in range(10**8)}",
    "format-width": "'{:>10000000000}'.format(1)",
    "ljust": "'a'.ljust(10**10)",
    "catches-memory-error-and-carries-on": "try:\n    'a' * 10**10\nexcept MemoryError:\n    pass\nreturn 1",
}


@pytest.mark.parametrize("code", MEMORY_BOMBS.values(), ids=MEMORY_BOMBS.keys())
async def test_memory_bomb_fails_with_memory_error_and_the_host_is_unharmed(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "MemoryError")


# --- Recursion and nesting --------------------------------------------------------------

RECURSIONS = {
    "self-recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "lambda-recursion": "f = lambda: f()\nf()",
    "mutual-recursion": "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)",
    "json-dumps-of-deep-list": "import json\nx = []\nfor i in range(200000):\n    x = [x]\njson.dumps(x)",
}


@pytest.mark.parametrize("code", RECURSIONS.values(), ids=RECURSIONS.keys())
async def test_deep_recursion_fails_with_recursion_error_and_the_host_is_unharmed(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "RecursionError")


async def test_deeply_nested_json_text_is_refused_inside_the_guest(host: Host) -> None:
    assert_guest_exception(await host.run("import json\njson.loads('[' * 200000 + ']' * 200000)"))


NESTED_SOURCES = {
    "nested-parentheses": "(" * 20_000 + "1" + ")" * 20_000,
    "long-operator-chain": "1" + "+1" * 20_000,
}


@pytest.mark.parametrize("code", NESTED_SOURCES.values(), ids=NESTED_SOURCES.keys())
async def test_pathologically_nested_source_is_a_syntax_failure_not_a_crash(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert isinstance(outcome.result.failure, SyntaxFailure), outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S


async def test_pathologically_nested_source_given_to_eval_is_a_syntax_error_the_program_raised(host: Host) -> None:
    assert_guest_exception(await host.run("eval('(' * 100000 + '1' + ')' * 100000)"), "SyntaxError")


DEEP_RETURNS = {
    "nested-lists": "x = []\nfor i in range(200000):\n    x = [x]\nreturn x",
    "nested-dicts": "d = {}\nfor i in range(100000):\n    d = {'a': d}\nreturn d",
}


@pytest.mark.parametrize("code", DEEP_RETURNS.values(), ids=DEEP_RETURNS.keys())
async def test_deeply_nested_return_is_refused_or_bounded_never_crashes_the_host(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert outcome.code in (None, "invalid-result", "result-too-large"), outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S
    if outcome.code is None:
        assert len(outcome.result.text) <= 64 * 1024


# --- Imports and escapes ----------------------------------------------------------------

FORBIDDEN_MODULES = [
    "subprocess", "socket", "ctypes", "importlib", "builtins", "threading",
    "multiprocessing", "signal", "shutil", "pickle", "marshal", "gc", "inspect", "io", "urllib",
]  # fmt: skip


@pytest.mark.parametrize("module", FORBIDDEN_MODULES)
async def test_importing_a_host_power_module_is_module_not_found(host: Host, module: str) -> None:
    failure = assert_guest_exception(await host.run(f"import {module}\nreturn str({module})"), "ModuleNotFoundError")
    assert module in failure.message


OS_ESCAPES = {
    "os-system": "import os\nos.system('touch /tmp/pwned')",
    "os-popen": "import os\nos.popen('id').read()",
    "os-fork": "import os\nos.fork()",
    "os-kill-parent": "import os\nos.kill(os.getppid(), 9)",
    "os-execv": "import os\nos.execv('/bin/sh', ['sh'])",
    "sys-modules": "import sys\nsys.modules['os']",
    "sys-exit": "import sys\nsys.exit(1)",
    "sys-setrecursionlimit": "import sys\nsys.setrecursionlimit(10**9)",
    "sys-settrace": "import sys\nsys.settrace(lambda *a: None)",
    "sys-stdout-write": "import sys\nsys.stdout.write('hi')",
}


@pytest.mark.parametrize("code", OS_ESCAPES.values(), ids=OS_ESCAPES.keys())
async def test_os_and_sys_give_no_process_control(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "AttributeError")


async def test_import_os_alone_is_harmless(host: Host) -> None:
    outcome = await host.run("import os\nimport sys\nreturn [str(os), str(sys), os.getcwd()]")
    assert outcome.code is None
    assert isinstance(outcome.result.value, list)
    assert outcome.result.value[2] == "/", "the guest sees a virtual root, not the host's working directory"


BUILTIN_ESCAPES = {
    "dunder-import": "__import__('os')",
    "eval-dunder-import": "eval('__import__(\"os\")')",
    "dunder-builtins": "__builtins__",
    "globals": "globals()",
    "vars": "vars()",
    "dir": "dir()",
    "compile": "compile('1', 'x', 'eval')",
    "input": "input()",
    "exit": "exit()",
    "quit": "quit()",
    "breakpoint": "breakpoint()",
    "help": "help()",
}


@pytest.mark.parametrize("code", BUILTIN_ESCAPES.values(), ids=BUILTIN_ESCAPES.keys())
async def test_dangerous_builtins_do_not_exist(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "NameError")


INTROSPECTION = {
    "tuple-subclasses": "().__class__.__base__.__subclasses__()",
    "object-subclasses": "object.__subclasses__()",
    "type-subclasses": "type(1).__subclasses__()",
    "type-dunder-subclasses": "type.__subclasses__(type)",
    "function-globals": "def f():\n    pass\nf.__globals__",
    "format-class": "'{0.__class__}'.format(1)",
    "format-globals": "def f():\n    pass\n'{0.__globals__}'.format(f)",
    "format-mro-of-binding": "'{0.__class__.__mro__}'.format(notes.search)",
    "fstring-binding-globals": "f'{notes.search.__globals__}'",
    "module-class": "notes.__class__",
    "env-dict": "env.__dict__",
    "getattr-module-dict": "getattr(notes, '__dict__')",
    "binding-globals": "notes.search.__globals__",
    "binding-self": "notes.search.__self__",
    "binding-closure": "notes.search.__closure__",
    "binding-code": "notes.search.__code__",
    "type-of-binding-call": "type(notes.search).__call__",
}


@pytest.mark.parametrize("code", INTROSPECTION.values(), ids=INTROSPECTION.keys())
async def test_dunder_introspection_reaches_no_host_object(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "AttributeError")


HARMLESS_REPRS = {
    "str-of-module": "str(notes)",
    "repr-of-env": "repr(env)",
    "str-of-nested-module": "str(env.notes)",
    "str-of-binding": "str(notes.search)",
    "str-of-locals": "str(locals())",
    "str-of-binding-type": "str(type(notes.search))",
    "made-up-class": "str(type('X', (), {}))",
    "eval-stays-inside": "eval('1 + 1')",
    "exec-stays-inside": "exec('x = 5')\nx",
}


@pytest.mark.parametrize("code", HARMLESS_REPRS.values(), ids=HARMLESS_REPRS.keys())
async def test_printing_bindings_and_eval_show_only_guest_level_text(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert outcome.code is None, outcome.result.text
    assert isinstance(outcome.result.value, str | int)
    assert "0x7f" not in outcome.result.text, "a host memory address must not leak"


async def test_locals_exposes_no_host_object(host: Host) -> None:
    # Namespaces the program never names are not bound at all; bound ones are not JSON.
    outcome = await host.run("locals()")
    assert outcome.code in (None, "invalid-result"), outcome.result.text
    assert "0x" not in outcome.result.text
    outcome = await host.run("x = notes\nlocals()")
    assert outcome.code == "invalid-result", outcome.result.text


async def test_exec_cannot_do_what_the_program_cannot(host: Host) -> None:
    assert_guest_exception(await host.run("exec('open(\"/etc/passwd\").read()')"), "PermissionError")


# --- Files ------------------------------------------------------------------------------

FILE_READS = {
    "open-etc-passwd": "open('/etc/passwd').read()",
    "relative-traversal": "open('../../../../etc/passwd').read()",
    "pathlib-read": "from pathlib import Path\nPath('/etc/passwd').read_text()",
    "listdir-root": "import os\nos.listdir('/')",
    "workspace-when-none-is-mounted": "open('/workspace/x', 'w')",
}


@pytest.mark.parametrize("code", FILE_READS.values(), ids=FILE_READS.keys())
async def test_host_files_are_unreadable(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert_guest_exception(outcome, "PermissionError")
    assert "root:" not in outcome.result.text


async def test_repo_source_is_unreadable(host: Host) -> None:
    outcome = await host.run(f"open({THIS_FILE!r}).read()")
    assert_guest_exception(outcome, "PermissionError")
    assert "def assert_stopped_at_deadline" not in outcome.result.text


async def test_writing_a_host_file_is_refused_and_no_file_appears(host: Host, tmp_path: Path) -> None:
    target = tmp_path / "written-by-guest.txt"
    for code in (
        f"open({str(target)!r}, 'w').write('pwned')",
        f"from pathlib import Path\nPath({str(target)!r}).write_text('pwned')",
        f"import os\nos.mkdir({str(tmp_path / 'made-by-guest')!r})",
    ):
        assert_guest_exception(await host.run(code), "PermissionError")
    assert entries(tmp_path) == []


async def test_deleting_a_host_file_is_refused_and_the_file_survives(host: Host, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    write(canary, "keep me")
    for code in (f"import os\nos.remove({str(canary)!r})", f"from pathlib import Path\nPath({str(canary)!r}).unlink()"):
        assert_guest_exception(await host.run(code), "PermissionError")
    assert read(canary) == "keep me"


# --- Environment ------------------------------------------------------------------------

ENV_READS = {
    "os-getenv": "import os\nos.getenv('MYCELIUM_TEST_SECRET')",
    "os-environ-item": "import os\nos.environ['MYCELIUM_TEST_SECRET']",
    "os-environ-get": "import os\nos.environ.get('MYCELIUM_TEST_SECRET')",
    "dict-of-environ": "import os\nreturn dict(os.environ)",
    "proc-self-environ": "open('/proc/self/environ').read()",
    "pathlib-proc-environ": "from pathlib import Path\nPath('/proc/self/environ').read_bytes()",
    "print-environ": "import os\nprint(os.environ)",
}


@pytest.mark.parametrize("code", ENV_READS.values(), ids=ENV_READS.keys())
async def test_host_environment_never_reaches_result_logs_or_messages(
    host: Host, code: str, env_secret: str, caplog: pytest.LogCaptureFixture
) -> None:
    outcome = await host.run(code)
    assert_guest_exception(outcome)
    # The fixture repeats these over every result and log record; said here for the rule.
    assert env_secret not in outcome.result.text
    assert env_secret not in "\n".join(outcome.result.logs)
    assert env_secret not in str(outcome.result.failure)
    assert env_secret not in caplog.text


async def test_worker_processes_do_not_inherit_the_host_environment(host: Host, env_secret: str) -> None:
    outcome = await host.run("return await notes.search(query='x')")
    assert outcome.code is None
    workers = child_pids()
    assert workers, "a worker should be alive between runs"
    for pid in workers:
        assert env_secret.encode() not in process_environ(pid)


# --- Results ----------------------------------------------------------------------------

HUGE_RESULTS = {
    "ten-megabyte-string": "return 'x' * (10 * 1024 * 1024)",
    "just-over-the-limit": "return 'x' * (64 * 1024)",
    "many-small-strings": "return ['abcdefgh'] * 200000",
}


@pytest.mark.parametrize("code", HUGE_RESULTS.values(), ids=HUGE_RESULTS.keys())
async def test_huge_return_is_result_too_large_and_nothing_is_returned(host: Host, code: str) -> None:
    outcome = await host.run(code)
    failure = outcome.result.failure
    assert isinstance(failure, ResultTooLarge), outcome.result.text
    assert failure.size > failure.limit
    assert outcome.result.value is None
    assert len(outcome.result.text) <= 1_000


NON_JSON_RESULTS = {
    "set": "{1, 2}",
    "bytes": "b'abc'",
    "class-instance": "class C:\n    pass\nC()",
    "instance-inside-dict": "class C:\n    pass\nreturn {'c': C()}",
    "type-object": "type(1)",
    "binding-module-type": "type(notes)",
    "date": "import datetime\nreturn datetime.date(2020, 1, 1)",
    "nan": "return float('nan')",
    "infinity": "return float('inf')",
    "int-key": "return {1: 'a'}",
}


@pytest.mark.parametrize("code", NON_JSON_RESULTS.values(), ids=NON_JSON_RESULTS.keys())
async def test_non_json_return_is_invalid_result(host: Host, code: str) -> None:
    outcome = await host.run(code)
    assert outcome.code == "invalid-result", outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S


async def test_returning_a_function_never_hands_the_host_a_callable(host: Host) -> None:
    outcome = await host.run("def f():\n    pass\nf")
    # Monty turns a function into its guest-level text; refusing it would be fine too.
    assert outcome.code in (None, "invalid-result"), outcome.result.text
    if outcome.code is None:
        assert isinstance(outcome.result.value, str)


async def test_returning_a_cycle_is_refused_or_flattened_never_hangs(host: Host) -> None:
    outcome = await host.run("x = []\nx.append(x)\nreturn x")
    assert outcome.code in (None, "invalid-result"), outcome.result.text
    assert outcome.elapsed < QUICK_BOUND_S


async def test_returning_an_integer_too_long_to_print_is_invalid_result(host: Host) -> None:
    # json.dumps refuses ints over 4,300 digits (CPython's int-to-str limit) with a ValueError.
    outcome = await host.run("return 10**5000")
    assert outcome.code == "invalid-result", outcome.result.text


# --- Output -----------------------------------------------------------------------------


async def test_print_flood_is_bounded_and_says_output_was_dropped(host: Host) -> None:
    outcome = await host.run("for i in range(100000):\n    print('x' * 100)\nreturn 'done'")
    assert outcome.result.value == "done"
    assert_dropped_output_is_reported(outcome.result.logs)
    assert outcome.elapsed < QUICK_BOUND_S


async def test_one_enormous_print_is_bounded_and_says_output_was_dropped(host: Host) -> None:
    outcome = await host.run("print('y' * 10**7)\nreturn 1")
    assert outcome.result.value == 1
    assert_dropped_output_is_reported(outcome.result.logs)


async def test_printing_forever_is_stopped_at_the_deadline_with_bounded_logs(host: Host) -> None:
    outcome = await host.run("while True:\n    print('x')")
    assert_stopped_at_deadline(outcome)
    assert_dropped_output_is_reported(outcome.result.logs)


# --- Operations -------------------------------------------------------------------------


async def test_unawaited_call_used_as_result_is_a_guest_exception_and_the_call_is_cancelled(host: Host) -> None:
    outcome = await host.run("x = notes.hang()\nreturn x")
    failure = assert_guest_exception(outcome)
    assert "await" in failure.message
    assert "notes.hang" in failure.message
    assert host.state.hang_started >= 1
    assert host.state.hang_running == 0, "the host operation kept running after execute returned"
    assert host.state.hang_cancelled == host.state.hang_started


async def test_unawaited_call_is_waited_for_and_never_outlives_the_run(host: Host) -> None:
    # A placed call is never silently dropped: the run waits for it, here until the deadline.
    outcome = await host.run("notes.hang()\nnotes.hang()\nreturn 'left them'")
    assert_stopped_at_deadline(outcome)
    assert host.state.hang_started >= 1
    assert host.state.hang_running == 0, "the host operation kept running after execute returned"
    assert host.state.hang_cancelled == host.state.hang_started


async def test_unawaited_search_results_are_not_mistaken_for_data(host: Host) -> None:
    outcome = await host.run("found = notes.search(query='a')\nreturn {'n': len(str(found)), 'found': found}")
    failure = assert_guest_exception(outcome)
    assert "await" in failure.message


async def test_awaited_call_that_never_returns_is_stopped_at_the_deadline_and_cancelled(host: Host) -> None:
    outcome = await host.run("return await notes.hang()")
    assert_stopped_at_deadline(outcome)
    assert host.state.hang_started == 1
    assert host.state.hang_cancelled == 1
    assert host.state.hang_running == 0


async def test_gathered_calls_that_never_return_are_all_cancelled_at_the_deadline(host: Host) -> None:
    outcome = await host.run("import asyncio\nawait asyncio.gather(*[notes.hang() for _ in range(20)])")
    assert_stopped_at_deadline(outcome)
    assert host.state.hang_started == 20
    assert host.state.hang_cancelled == 20
    assert host.state.hang_running == 0


async def test_two_thousand_sequential_operation_calls_succeed(host: Host) -> None:
    runtime = await host.open(max_operation_calls=10_000, timeout_ms=30_000)
    code = "n = 0\nfor i in range(2000):\n    found = await notes.search(query='a')\n    n += len(found)\nreturn n"
    outcome = await host.run(code, runtime)
    assert outcome.result.value == 2000, outcome.result.text
    assert host.state.searches == 2000


async def test_calls_beyond_the_operation_limit_fail_and_never_reach_the_host(host: Host) -> None:
    outcome = await host.run("for i in range(1000):\n    await notes.search(query='a')\nreturn 'all done'")
    failure = assert_guest_exception(outcome, "RuntimeError")
    assert str(MAX_OPERATION_CALLS) in failure.message
    assert host.state.searches == MAX_OPERATION_CALLS


async def test_swallowing_the_operation_limit_error_does_not_lift_the_limit(host: Host) -> None:
    code = (
        "n = 0\nfor i in range(1000):\n    try:\n        await notes.search(query='a')\n        n += 1\n"
        "    except Exception:\n        pass\nreturn n"
    )
    outcome = await host.run(code)
    assert outcome.result.value == MAX_OPERATION_CALLS
    assert host.state.searches == MAX_OPERATION_CALLS


async def test_gathering_more_calls_than_the_limit_fails_and_the_host_sees_at_most_the_limit(host: Host) -> None:
    code = "import asyncio\nawait asyncio.gather(*[notes.search(query='a') for _ in range(1000)])"
    assert_guest_exception(await host.run(code), "RuntimeError")
    assert host.state.searches <= MAX_OPERATION_CALLS


async def test_operation_failure_is_capability_failed_and_its_secret_never_reaches_the_model(host: Host) -> None:
    outcome = await host.run("await notes.explode()")
    failure = outcome.result.failure
    assert isinstance(failure, CapabilityFailed), outcome.result.text
    assert (failure.module, failure.operation) == ("security-notes", "explode")
    assert failure.reference in outcome.result.text
    for shown in (outcome.result.text, str(failure), "\n".join(outcome.result.logs)):
        assert host.state.op_secret not in shown
        assert "postgres" not in shown


async def test_operation_failure_caught_by_the_guest_shows_it_no_secret(host: Host) -> None:
    code = (
        "try:\n    await notes.explode()\nexcept Exception as e:\n    print(repr(e))\n"
        "    return {'type': type(e).__name__, 'message': str(e)}"
    )
    outcome = await host.run(code)
    assert outcome.code is None, outcome.result.text
    value = outcome.result.value
    assert isinstance(value, dict)
    assert "failed on the host" in value["message"]
    assert "postgres" not in outcome.result.text
    assert "postgres" not in "\n".join(outcome.result.logs)


async def test_operation_failure_reraised_by_the_guest_stays_capability_failed(host: Host) -> None:
    code = "try:\n    await notes.explode()\nexcept Exception as e:\n    raise RuntimeError(str(e))"
    assert (await host.run(code)).code == "capability-failed"


async def test_guest_cannot_forge_a_capability_failure(host: Host) -> None:
    outcome = await host.run("raise RuntimeError('notes.explode failed on the host (reference ref-000000000000).')")
    assert_guest_exception(outcome, "RuntimeError")


async def test_operation_arguments_cannot_make_the_host_hold_more_than_the_guest_memory_limit(host: Host) -> None:
    # One 8 MB string in the guest, passed to 40 concurrent calls: the host materialises a
    # copy per call. A guest held to 64 MiB must not make the host hold 320 MB at once.
    runtime = await host.open(timeout_ms=20_000)
    code = (
        "import asyncio\nbig = 'x' * 8_000_000\n"
        "sizes = await asyncio.gather(*[notes.hold(text=big) for _ in range(40)])\nreturn sum(sizes)"
    )
    outcome = await host.run(code, runtime)
    assert outcome.code in (None, "guest-exception"), outcome.result.text
    assert host.state.peak_held_bytes <= GUEST_MEMORY_LIMIT, (
        f"the host held {host.state.peak_held_bytes / MIB:.0f} MiB of operation input at once "
        f"for a guest limited to {GUEST_MEMORY_LIMIT / MIB:.0f} MiB"
    )


IDENTITY_SPOOFS = {
    "ctx-keyword": "await notes.whoami(ctx={'session_id': 'admin', 'tool_call_id': 'forged'})",
    "ctx-in-mapping": "await notes.whoami({'ctx': {'session_id': 'admin'}})",
    "context-fields": "await notes.whoami(session_id='admin', operation_ordinal=0)",
    "internal-field-name": "await notes.whoami(p0='admin')",
}


@pytest.mark.parametrize("code", IDENTITY_SPOOFS.values(), ids=IDENTITY_SPOOFS.keys())
async def test_a_guest_cannot_supply_the_invocation_context_the_host_injects(host: Host, code: str) -> None:
    assert_guest_exception(await host.run(code), "ValueError")
    genuine = (await host.run("return await notes.whoami()")).result.value
    assert isinstance(genuine, dict)
    assert (genuine["session"], genuine["ordinal"]) == (None, 0)
    assert str(genuine["tool_call"]).startswith("call-")


BAD_ARGUMENTS = {
    "bytes-argument": ("await notes.search(query=b'x')", "ValueError"),
    "set-argument": ("await notes.search({'query': {1, 2}})", "ValueError"),
    "mapping-and-keywords": ("await notes.search({'query': 'a'}, query='b')", "TypeError"),
    "wrong-type": ("await notes.search(query=1)", "ValueError"),
    "unknown-operation": ("await notes.drop_all_tables()", "AttributeError"),
}


@pytest.mark.parametrize(("code", "type_name"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
async def test_malformed_operation_calls_fail_in_the_guest_before_the_host_runs(
    host: Host, code: str, type_name: str
) -> None:
    assert_guest_exception(await host.run(code), type_name)
    assert host.state.searches == 0


# --- Sleeping ---------------------------------------------------------------------------

SLEEP_FOREVER = {
    "time-sleep": "import time\ntime.sleep(10**6)\nreturn 'woke'",
    "asyncio-sleep": "import asyncio\nawait asyncio.sleep(10**6)\nreturn 'woke'",
}


@pytest.mark.parametrize("code", SLEEP_FOREVER.values(), ids=SLEEP_FOREVER.keys())
async def test_sleeping_forever_is_cut_short_and_never_holds_the_host(host: Host, code: str) -> None:
    outcome = await host.run(code)
    # Each sleep is cut to max_sleep_ms; a typed failure would be acceptable too.
    assert outcome.code in (None, "guest-exception", "deadline-exceeded"), outcome.result.text
    assert outcome.elapsed < (MAX_SLEEP_MS + MAX_TOTAL_SLEEP_MS) / 1000 + 1.0


SLEEP_LOOPS = {
    "time-sleep-loop": "import time\nwhile True:\n    time.sleep(10**6)",
    "asyncio-sleep-loop": "import asyncio\nwhile True:\n    await asyncio.sleep(10**6)",
    "gathered-sleeps": "import asyncio\nawait asyncio.gather(*[asyncio.sleep(10**6) for _ in range(100)])",
}


@pytest.mark.parametrize("code", SLEEP_LOOPS.values(), ids=SLEEP_LOOPS.keys())
async def test_sleeping_past_the_total_sleep_budget_fails_quickly(host: Host, code: str) -> None:
    failure = assert_guest_exception(await host.run(code), "TimeoutError")
    assert "sleep" in failure.message


# --- Exceptions and syntax --------------------------------------------------------------


async def test_syntax_error_is_a_syntax_failure_with_its_line(host: Host) -> None:
    outcome = await host.run("x = 1\ndef (:\n    pass")
    failure = outcome.result.failure
    assert isinstance(failure, SyntaxFailure), outcome.result.text
    assert failure.line == 2
    assert "line 2" in outcome.result.text


EXITS = {
    "system-exit": ("raise SystemExit", "SystemExit"),
    "system-exit-with-code": ("raise SystemExit(3)", None),
    "keyboard-interrupt": ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    "base-exception": ("raise BaseException('bye')", "BaseException"),
    "generator-exit": ("raise GeneratorExit", None),
}


@pytest.mark.parametrize(("code", "type_name"), EXITS.values(), ids=EXITS.keys())
async def test_exit_exceptions_end_only_the_guest(host: Host, code: str, type_name: str | None) -> None:
    assert_guest_exception(await host.run(code), type_name)


FORGED_LIMITS = {
    "forged-timeout": ("raise TimeoutError('time limit exceeded')", "TimeoutError"),
    "forged-memory": ("raise MemoryError('memory limit exceeded')", "MemoryError"),
    "forged-recursion": ("raise RecursionError('maximum recursion depth exceeded')", "RecursionError"),
}


@pytest.mark.parametrize(("code", "type_name"), FORGED_LIMITS.values(), ids=FORGED_LIMITS.keys())
async def test_guest_raising_a_limit_error_cannot_forge_a_host_failure(host: Host, code: str, type_name: str) -> None:
    assert_guest_exception(await host.run(code), type_name)


async def test_huge_exception_message_gives_a_bounded_result_text(host: Host) -> None:
    outcome = await host.run("raise ValueError('x' * 1_000_000)")
    failure = assert_guest_exception(outcome, "ValueError")
    assert len(outcome.result.text) <= 1_000
    assert len(failure.message) <= 10_000


async def test_catastrophic_regex_is_harmless(host: Host) -> None:
    outcome = await host.run("import re\nreturn re.match('(a+)+$', 'a' * 40 + 'b') is None")
    assert outcome.code in (None, "deadline-exceeded"), outcome.result.text
    assert outcome.elapsed < STOP_BOUND_S


async def test_nothing_survives_between_runs(host: Host) -> None:
    first = await host.run("secret_here = 'kept?'\nreturn 1")
    assert first.result.value == 1
    second = await host.run("return secret_here")
    assert_guest_exception(second, "NameError")

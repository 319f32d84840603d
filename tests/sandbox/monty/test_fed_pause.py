"""Which programs that may pause are fed whole, and captured from inside their deferred call.

Only a program in which nothing else can be in flight when a call defers is fed: each
operation call awaited where it is made, nothing beside it (asyncio), no sleep, no code
hidden from the check, nothing that could catch the end of the feed. Every other is
driven step by step. A wrong "yes" here would pause a run whose state does not say what
became of a call, so the rule leans to "no".
"""

from __future__ import annotations

import pytest

from mycelium.sandbox.monty._fed_pause import pausable_fed

NAMESPACES = ("notes", "env", "forage")

FED = {
    "one awaited call": "return await notes.search(query='x')",
    "calls awaited in a loop": "t = 0\nfor i in range(3):\n    t += len(await notes.search(query=str(i)))\nreturn t",
    "a nested path": "return await env.notes.search(query='x')",
    "an awaited call inside an expression": "return [await notes.search(query=q) for q in 'ab']",
    "the namespace imported": "import notes\nreturn await notes.search(query='x')",
    "other modules": "import json\nfrom datetime import date\nreturn json.dumps(await notes.search(query='x'))",
    "no call at all": "return 1 + 2",
}
STEPPED = {
    "a gather": "import asyncio\nreturn await asyncio.gather(notes.search(query='a'), notes.search(query='b'))",
    "a call awaited later": "t = notes.search(query='a')\nreturn await t",
    "a call never awaited": "notes.search(query='a')\nreturn 1",
    "an operation kept under a name": "f = notes.search\nreturn await f(query='a')",
    "a namespace passed along": "def g(ns):\n    return ns\nreturn await g(notes).search(query='a')",
    "a namespace rebound": "notes = 1\nreturn notes",
    "an operation imported by name": "from notes import search\nreturn await search(query='a')",
    "a namespace imported under another name": "import notes as n\nreturn await n.search(query='a')",
    "a sleep": "import time\ntime.sleep(0.01)\nreturn await notes.search(query='a')",
    "a sleep imported by name": "from time import sleep\nsleep(0.01)\nreturn 1",
    "a try": "try:\n    return await notes.search(query='a')\nexcept Exception:\n    return None",
    "a with": "with open('x') as f:\n    return await notes.search(query='a')",
    "an async function": "async def f():\n    return await notes.search(query='a')\nreturn await f()",
    "exec": "exec('x = 1')\nreturn await notes.search(query='a')",
    "a lookup by name": "return await getattr(notes, 'search')(query='a')",
    "not Python": "return await notes.search(query='a'",
    "too long to check on the event loop": "x = 1\n" * 400 + "return await notes.search(query='a')",
}


@pytest.mark.parametrize("code", FED.values(), ids=FED.keys())
def test_a_program_awaiting_each_call_where_it_is_made_is_fed_while_it_may_pause(code: str) -> None:
    assert pausable_fed(code, NAMESPACES)


@pytest.mark.parametrize("code", STEPPED.values(), ids=STEPPED.keys())
def test_a_program_that_could_leave_something_in_flight_at_a_pause_is_stepped(code: str) -> None:
    assert not pausable_fed(code, NAMESPACES)

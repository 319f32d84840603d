"""Objects the library hands out cannot be made, copied or pickled by users: each says where to get one."""

from __future__ import annotations

import copy
import pickle
import re

import pytest

from mycelium import ExecuteTool, GatedTool, Lease, PreparedExecute, Runtime, ToolCall
from mycelium.testing import rejecting_sandbox


@pytest.mark.parametrize(
    ("kind", "where"),
    [
        (Lease, "Runtime.acquire() or Runtime.lease()"),
        (ExecuteTool, "Lease.execute_tool"),
        (PreparedExecute, "ExecuteTool.prepare()"),
        (GatedTool, "Lease.tools"),
    ],
)
def test_a_handed_out_object_cannot_be_constructed_and_the_error_says_where_to_get_one(kind: type, where: str) -> None:
    with pytest.raises(TypeError, match=re.escape(f"{kind.__name__} cannot be constructed; get one from {where}")):
        kind()
    with pytest.raises(TypeError, match="cannot be constructed"):
        kind("the", "runtime's", private="records")


async def test_a_handed_out_object_cannot_be_copied_or_pickled_so_a_lease_has_one_owner() -> None:
    async with Runtime(modules=[], sandbox=rejecting_sandbox()) as runtime, runtime.lease() as lease:
        prepared = lease.execute_tool.prepare(ToolCall(id="c", name="execute", arguments={"code": "1"}))
        for handed_out in (lease, lease.execute_tool, prepared):
            name = type(handed_out).__name__
            with pytest.raises(TypeError, match=f"{name} cannot be copied"):
                copy.copy(handed_out)
            with pytest.raises(TypeError, match=f"{name} cannot be copied"):
                copy.deepcopy(handed_out)
            with pytest.raises(TypeError, match=f"{name} cannot be pickled"):
                pickle.dumps(handed_out)
        assert runtime.leases_held == 1

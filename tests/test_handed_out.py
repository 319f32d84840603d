"""Objects the library hands out cannot be made by users: each says where to get one."""

from __future__ import annotations

import re

import pytest

from mycelium import ExecuteTool, GatedTool, Lease, PreparedExecute


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

"""The typed failure set: ``Failure`` is a documented union that still works as a type."""

from __future__ import annotations

import pydoc
import typing

import mycelium
from mycelium.failures import (
    ApprovalPending,
    BadResponse,
    Cancelled,
    CapabilityFailed,
    DeadlineExceeded,
    Failure,
    GuestException,
    InvalidArguments,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    SuspensionFailed,
    SyntaxFailure,
    TransportLost,
    Unknown,
)

MEMBERS = (
    SyntaxFailure,
    GuestException,
    TransportLost,
    BadResponse,
    CapabilityFailed,
    DeadlineExceeded,
    Cancelled,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    InvalidArguments,
    SuspensionFailed,
    ApprovalPending,
    Unknown,
)


def test_help_of_failure_documents_the_union_and_names_every_member_with_its_code() -> None:
    shown = pydoc.render_doc(mycelium.Failure, renderer=pydoc.plaintext)
    assert "Any typed execute failure" in shown
    assert "UnionType" not in shown
    for member in MEMBERS:
        assert f"``{member.__name__}`` ({member.code})" in shown


def test_failure_is_still_the_closed_union_for_isinstance_and_typing() -> None:
    assert typing.get_args(Failure) == MEMBERS
    assert isinstance(Unknown(), Failure)
    assert isinstance(DeadlineExceeded(timeout_ms=1, acknowledged=True), Failure)
    assert not isinstance(ValueError("x"), Failure)
    assert typing.get_args(Failure | None) == (*MEMBERS, type(None))

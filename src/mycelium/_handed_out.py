"""Objects the library hands out (a lease, its tools, a prepared execute) cannot be made by users.

They hold the runtime's private records; made any other way they would hold none, so
constructing one is refused with a ``TypeError`` that says where to get it. Copying or
pickling one is refused the same way: a copy of a lease would be a second owner of its
hold. The library makes them through :meth:`HandedOut._made`, from a typed classmethod
of each class.
"""

from __future__ import annotations

from typing import ClassVar, Self, SupportsIndex

__all__ = ["HandedOut"]


class HandedOut:
    """Base of the objects the library hands out; ``_handed_out_by`` says where they come from."""

    __slots__ = ()

    _handed_out_by: ClassVar[str]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(f"{type(self).__name__} cannot be constructed; get one from {self._handed_out_by}")

    def __copy__(self) -> Self:
        raise TypeError(f"{type(self).__name__} cannot be copied; get another from {self._handed_out_by}")

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        return self.__copy__()

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[object, ...]:
        raise TypeError(f"{type(self).__name__} cannot be pickled; get one from {self._handed_out_by}")

    @classmethod
    def _made(cls, **fields: object) -> Self:
        """One made by the library, its attributes set from ``fields`` (no ``__init__`` runs)."""
        made = cls.__new__(cls)
        for name, value in fields.items():
            setattr(made, name, value)
        return made

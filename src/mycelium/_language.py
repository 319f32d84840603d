"""The guest language a sandbox runs: what its programs may use, and which names they already have.

A sandbox states these facts about itself (``Sandbox.language``). The execute tool's
description tells the model what the language is; installing modules refuses names that
would clash, in a program, with a module or builtin the language already has. Nothing here
depends on any particular sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["LanguageFacts"]


@dataclass(frozen=True)
class LanguageFacts:
    """What a sandbox's guest language offers a program.

    - ``description``: the paragraphs the model reads about the language (what is and is not
      supported, what is out of reach), before Mycelium's own rules for calling operations.
    - ``imports``: the modules ``import X`` gives a program, and no other; listed for the model.
    - ``reserved_modules``: names no namespace segment may take, at any depth: the importable
      modules and any the language keeps for itself.
    - ``builtins``: names every program already has; no module may take one as its top-level name.
    """

    description: str = "Language: Python."
    imports: frozenset[str] = field(default_factory=frozenset)
    reserved_modules: frozenset[str] = field(default_factory=frozenset)
    builtins: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError("LanguageFacts.description must be a non-empty string")
        for name in ("imports", "reserved_modules", "builtins"):
            names = getattr(self, name)
            if isinstance(names, str) or not all(isinstance(item, str) for item in names):
                raise ValueError(f"LanguageFacts.{name} must be a collection of names")
            object.__setattr__(self, name, frozenset(names))
        if not self.imports <= self.reserved_modules:
            raise ValueError("LanguageFacts.reserved_modules must hold every one of its imports")

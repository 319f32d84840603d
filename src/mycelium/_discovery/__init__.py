"""Discovery: how a model finds the operations of one graph revision (``forage`` in a guest).

A :class:`Catalog` describes exactly one revision: it searches (lexically, and by meaning
when given a :class:`SemanticRanker`), lists and describes operations, every output and
every guest input bounded. :func:`forage_bindings` serves it to a guest as ``forage``.

The modules, each one job:

- ``_catalog``: the :class:`Catalog`, and the limits on what a guest asks of it
- ``_entry``: :class:`CatalogEntry`, one operation as discovery lists it
- ``_words``: how text becomes stems (tokens, stopwords, stemming, related words)
- ``_ranking``: the BM25 index of a catalog, and the fusion of rankings
- ``_semantic``: the protocol of a ranker by meaning, and what it embeds
- ``_rendering``: stubs bounded for a model
- ``_stubs``: the renderer of Python stubs from JSON Schema
- ``_namespaces``: a catalog's namespaces, outlined, and as stub files
- ``_forage``: the guest's ``forage`` namespace
"""

from __future__ import annotations

from ._catalog import (
    DEFAULT_SEARCH_LIMIT,
    MAX_DESCRIBE_CHARS,
    MAX_LIST_ENTRIES,
    MAX_PATH_CHARS,
    MAX_PHRASINGS,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_SEARCH_LIMIT,
    MAX_SEARCH_WORDS,
    Catalog,
)
from ._entry import CatalogEntry
from ._forage import FORAGE_MODULE_ID, FORAGE_STUB, forage_bindings
from ._namespaces import NamespaceStubs
from ._namespaces import namespace_outline as namespace_outline
from ._rendering import render_bounded as render_bounded
from ._semantic import SemanticIndex, SemanticRanker, check_ranker, semantic_texts

# namespace_outline and render_bounded serve the execute tool's description (mycelium.execute),
# not users: importable from here, and not listed.
__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "FORAGE_MODULE_ID",
    "FORAGE_STUB",
    "MAX_DESCRIBE_CHARS",
    "MAX_LIST_ENTRIES",
    "MAX_PATH_CHARS",
    "MAX_PHRASINGS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_WORDS",
    "MAX_SEARCH_LIMIT",
    "MAX_SEARCH_WORDS",
    "Catalog",
    "CatalogEntry",
    "NamespaceStubs",
    "SemanticIndex",
    "SemanticRanker",
    "check_ranker",
    "forage_bindings",
    "semantic_texts",
]

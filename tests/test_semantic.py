"""Ranking by meaning (the ``semantic`` extra): WordLlama loaded offline, fused with lexical search.

Runs where WordLlama is installed (``make test`` installs it); elsewhere the whole module
skips and says why. Everything here uses the real model from the installed wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mycelium import Module, Runtime, operation
from mycelium._discovery import Catalog
from mycelium._graph import build_graph
from mycelium.sandbox.monty import MontySandbox

pytest.importorskip("wordllama", reason="the semantic extra (WordLlama) is not installed")

from mycelium import semantic  # after the skip: it needs the extra
from mycelium.semantic import DIMENSIONS, WordLlamaRanker, load_wordllama


class Ref(BaseModel):
    id: str


def _op(description: str, phrasings: list[str] | None = None) -> Any:
    return operation(input=Ref, execute=lambda: None, description=description, phrasings=phrasings)


def payments(description: str = "Creates a refund for a charge.") -> list[Module]:
    return [
        Module(
            id="payments",
            name="payments",
            operations={
                "refunds.create": _op(description),
                "charges.capture": _op("Capture the funds of an authorized charge."),
                "customers.create": _op("Creates a new customer object."),
                "payouts.create": _op("Send funds to your bank account."),
            },
        ),
        Module(
            id="chat",
            name="chat",
            operations={
                "channels.create": _op("Create a channel in a workspace."),
                "messages.post": _op("Post a message to a channel."),
            },
        ),
    ]


def paths(entries: list[Any]) -> list[str]:
    return [entry.path for entry in entries]


class CountingModel:
    """The real model, counting the texts it embeds for an index."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.embedded: list[str] = []

    def embed(self, texts: list[str], **options: Any) -> Any:
        self.embedded.extend(texts)
        return self._model.embed(texts, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingModel:
    model = CountingModel(load_wordllama())
    monkeypatch.setattr(semantic, "_model", model)
    return model


def test_the_model_loads_from_the_wheel_with_no_network(tmp_path: Path) -> None:
    # A fresh process with every socket refused and an empty home (no download cache):
    # WordLlama's own load() fails there; ours reads the wheel and embeds.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        import wordllama
        try:
            wordllama.WordLlama.load()
        except Exception as exc:
            print("plain load failed:", type(exc).__name__)
        else:
            print("plain load worked")

        from mycelium.semantic import load_wordllama
        model = load_wordllama()
        print("ours:", model.embed(["refund a charge"], norm=True).shape)
        """
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "plain load failed" in done.stdout
    assert f"ours: (1, {DIMENSIONS})" in done.stdout
    assert not any(home.rglob("*.safetensors")), "nothing may be downloaded or copied into the cache"


def test_the_model_is_loaded_once_per_process() -> None:
    assert load_wordllama() is load_wordllama()


def test_semantic_ranking_finds_a_paraphrase_that_shares_no_word() -> None:
    graph = build_graph(payments(), revision=1)
    query = "give the buyer their money back"
    lexical = paths(Catalog(graph).search(query, limit=3))
    fused = paths(Catalog(graph, WordLlamaRanker()).search(query, limit=3))
    assert "payments.refunds.create" not in lexical
    assert "payments.refunds.create" in fused


def test_exact_paths_still_rank_first_with_semantic_ranking() -> None:
    catalog = Catalog(build_graph(payments(), revision=1), WordLlamaRanker())
    for entry in catalog.entries:
        assert catalog.search(entry.path)[0].path == entry.path
        assert catalog.search(["something else entirely", entry.path])[0].path == entry.path


def test_a_query_of_no_known_word_ranks_without_failing() -> None:
    catalog = Catalog(build_graph(payments(), revision=1), WordLlamaRanker())
    for query in ("", "   ", "!!!", "\u2603\u2603", "zzqxj"):
        assert isinstance(catalog.search(query), list)
    assert isinstance(catalog.search(["", "!!!"]), list)


def test_a_query_is_embedded_as_wordllama_embeds_it() -> None:
    model = load_wordllama()
    ranker = WordLlamaRanker()
    texts = ["refund a charge", "open a channel", "bank payout", "new customer"]
    index = ranker.index([[text] for text in texts])
    for position, text in enumerate(texts):
        assert index.nearest([text], 1) == [position]
    # The index's own query embedding agrees with WordLlama's embed().
    vector = model.embed(["refund a charge"], norm=True)[0]
    similarity = model.embed(texts, norm=True) @ vector
    assert index.nearest(["refund a charge"], 4) == sorted(range(4), key=lambda i: -similarity[i])


def test_each_text_is_embedded_once_and_a_new_revision_embeds_only_what_changed(counting: CountingModel) -> None:
    ranker = WordLlamaRanker()
    Catalog(build_graph(payments(), revision=1), ranker)
    first = len(counting.embedded)
    assert first == 6  # one text per operation
    Catalog(build_graph(payments(), revision=2), ranker)
    assert len(counting.embedded) == first
    Catalog(build_graph(payments("Refunds a charge, in full or in part."), revision=3), ranker)
    assert counting.embedded[first:] == ["payments refunds create Refunds a charge in full or in part"]


def test_the_vector_cache_is_bounded(counting: CountingModel) -> None:
    ranker = WordLlamaRanker(cache_size=2)
    Catalog(build_graph(payments(), revision=1), ranker)
    Catalog(build_graph(payments(), revision=2), ranker)
    assert len(counting.embedded) == 12 - 2  # only the two most recent texts were kept
    nothing = WordLlamaRanker(cache_size=0)
    Catalog(build_graph(payments(), revision=1), nothing)
    Catalog(build_graph(payments(), revision=2), nothing)
    assert len(counting.embedded) == 10 + 12


@pytest.mark.parametrize("size", [-1, 1.5, "10", True])
def test_a_bad_cache_size_is_refused(size: Any) -> None:
    with pytest.raises(ValueError, match="cache_size"):
        WordLlamaRanker(cache_size=size)


def test_host_phrasings_are_embedded_each_on_its_own(counting: CountingModel) -> None:
    modules = [
        Module(
            id="home",
            name="home",
            operations={
                "thermostat.set": _op("Set the target temperature.", phrasings=["make it warmer", "I am cold"]),
                "lights.set": _op("Set the brightness of a light."),
            },
        )
    ]
    catalog = Catalog(build_graph(modules, revision=1), WordLlamaRanker())
    assert {"make it warmer", "I am cold"} <= set(counting.embedded)
    assert paths(catalog.search("I'm freezing in here"))[0] == "home.thermostat.set"


async def test_a_runtime_given_the_ranker_finds_paraphrases_for_a_guest() -> None:
    program = 'return [e["path"] for e in await forage.search(["give the buyer their money back"], limit=3)]'
    async with (
        Runtime(modules=payments(), sandbox=MontySandbox(), semantic=WordLlamaRanker()) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run(program)
    assert not result.is_error, result.text
    assert isinstance(result.value, list)
    assert "payments.refunds.create" in result.value


@pytest.mark.parametrize("query", ["!!!", "???", "\U0001f4b8\U0001f4b8", "\u200b", "-- --", ["!!!", "$$$"]])
def test_a_query_with_no_word_finds_nothing_rather_than_anything(query: Any) -> None:
    catalog = Catalog(build_graph(payments(), revision=1), WordLlamaRanker())
    assert catalog.search(query) == []


@pytest.mark.parametrize("phrasing", ["\U0001f4b8", "$$$", "???", "\u200b"])
def test_a_host_phrasing_with_no_word_indexes_cleanly(phrasing: str) -> None:
    modules = [Module(id="m", name="m", operations={"refund": _op("Creates a refund.", phrasings=[phrasing])})]
    catalog = Catalog(build_graph(modules, revision=1), WordLlamaRanker())  # warnings are errors in this suite
    assert paths(catalog.search("refund"))[0] == "m.refund"


def test_however_many_phrasings_an_operation_has_it_takes_at_most_two_rows() -> None:
    many = [f"phrasing number {word}" for word in ("one", "two", "three", "four", "five", "six", "seven")]
    modules = [Module(id="m", name="m", operations={"a": _op("First.", phrasings=many), "b": _op("Second.")})]
    catalog = Catalog(build_graph(modules, revision=1), WordLlamaRanker())
    assert catalog._semantic is not None
    assert catalog._semantic._matrix.shape[0] == 3  # type: ignore[attr-defined]

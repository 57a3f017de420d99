"""StoreContract: the behaviour every Store keeps, run over every implementation."""

from __future__ import annotations

import math

import pytest

from campaign_support import replay_setup
from fleetsieve.errors import InputError
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.store import MemoryStore, Proposal, SQLiteStore, open_store

CELL = Cell("chat", 2, 1.5)


def _proposal(i: int, cell: Cell = CELL) -> Proposal:
    return Proposal(f"p{i:05d}", i, cell, repeat=0, seed=7)


def _measurement(cell: Cell = CELL, **kw) -> Measurement:
    base = dict(cell=cell, metrics={"p99_e2el_ms": 1234.5, "request_throughput": 1.4}, gpu_seconds=600.0, duration_s=300.0)
    return Measurement(**{**base, **kw})


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    made = MemoryStore() if request.param == "memory" else SQLiteStore(f"sqlite:///{tmp_path / 'c.db'}")
    yield made
    made.close()


class TestStoreContract:
    def test_fresh_store_is_empty(self, store):
        assert store.load_setup() is None and store.proposals() == [] and store.results() == []
        assert store.pending() == [] and store.gpu_seconds() == 0.0

    def test_setup_round_trips_and_is_saved_once(self, store):
        setup = replay_setup(seed=3)
        store.save_setup(setup)
        assert store.load_setup() == setup
        with pytest.raises(InputError, match="already"):
            store.save_setup(setup)

    def test_proposals_and_results_keep_their_order(self, store):
        cells = [Cell("chat", tp, 1.0) for tp in (4, 1, 2)]
        for i, c in enumerate(cells):
            store.add_proposal(_proposal(i, c))
        store.add_result("p00002", _measurement(cells[2]))
        store.add_result("p00000", _measurement(cells[0], gpu_seconds=10.0))
        assert [p.cell for p in store.proposals()] == cells
        assert [pid for pid, _ in store.results()] == ["p00002", "p00000"]
        assert [p.id for p in store.pending()] == ["p00001"]
        assert store.gpu_seconds() == 610.0 and store.has_result("p00000") and not store.has_result("p00001")

    def test_measurement_round_trips_exactly(self, store):
        m = _measurement(status=Status.ABORTED_INFEASIBLE, reason="backlog", repeat=2,
                         metrics={"p99_e2el_ms": math.nan, "request_throughput": 0.5}, extra={"source": "x", "n": 3})
        store.add_proposal(_proposal(0))
        store.add_result("p00000", m)
        (_, back), = store.results()
        assert back.status is Status.ABORTED_INFEASIBLE and back.reason == "backlog" and back.repeat == 2
        assert math.isnan(back.metric("p99_e2el_ms")) and back.metric("request_throughput") == 0.5
        assert dict(back.extra) == {"source": "x", "n": 3} and back.cell == CELL

    def test_duplicates_are_refused_and_change_nothing(self, store):
        store.add_proposal(_proposal(0))
        with pytest.raises(InputError):
            store.add_proposal(_proposal(0))
        store.add_result("p00000", _measurement())
        with pytest.raises(InputError, match="already has a measurement"):
            store.add_result("p00000", _measurement(gpu_seconds=1.0))
        with pytest.raises(InputError, match="unknown proposal"):
            store.add_result("p00099", _measurement())
        assert len(store.proposals()) == 1 and store.gpu_seconds() == 600.0

    def test_proposal_lookup(self, store):
        store.add_proposal(_proposal(0))
        assert store.proposal("p00000") == _proposal(0) and store.proposal("nope") is None


@pytest.mark.parametrize("url, needle", [
    (None, "--storage: missing"),
    ("", "--storage: missing"),
    ("postgres://x/y", "unsupported storage URL"),
    ("sqlite:///", "not a SQLite URL"),
])
def test_open_store_rejects_bad_urls(url, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        open_store(url)


def test_open_store_memory():
    assert isinstance(open_store("memory://"), MemoryStore)

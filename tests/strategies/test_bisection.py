"""bisection finds every SLO capacity in logarithmically many cells; capacity-only ignores latency."""

from __future__ import annotations

import math

from fleetsieve.knowledge import CellSpace, Knowledge, true_capacities
from fleetsieve.records import Cell, Measurement
from fleetsieve.spec import parse_spec
from fleetsieve.strategies import ProfilingState, capacity_only_capacities, make_strategy

from fleetsieve.model.synthetic import small_world


def campaign(name: str, spec, space, truth: dict, seed: int = 0) -> list[Measurement]:
    strategy, revealed = make_strategy(name), []
    while cells := strategy.propose(ProfilingState(Knowledge(spec, space, revealed), frozenset(), seed), 1):
        revealed.append(truth[cells[0]])
    return revealed


def test_bisection_resolves_every_capacity_with_few_cells():
    spec, grid, space = small_world(1)
    truth = {c: grid.runs(c)[0] for c in space.cells()}
    revealed = campaign("bisection", spec, space, truth)
    kappa = true_capacities(spec, space, grid.measurements)
    bounds = Knowledge(spec, space, revealed).bounds()
    assert all(b.lo == b.hi == kappa[cfg] for cfg, b in bounds.items())
    per_config = {cfg: sum(m.cell.config == cfg for m in revealed) for cfg in space.levels}
    assert max(per_config.values()) <= math.ceil(math.log2(len(space.levels[("chat", 1)]) + 1))


def paper_failure():
    """One workload, TP 2 keeps up at every level but its p99 is 46.4 s from 3 req/s on."""
    spec = parse_spec({"gpu_budget": 8, "tp_degrees": [2, 4], "workloads": {"chat": {"demand_rps": 12.0, "slo": {"p99_e2el_ms": 30000}}}})
    space = CellSpace.from_levels({("chat", 2): (1.0, 2.0, 3.0, 4.0), ("chat", 4): (2.0, 4.0, 6.0, 8.0)}, 100.0)
    truth = {}
    for c in space.cells():
        p99 = (46400.0 if c.load_rps >= 3.0 else 20000.0) if c.tp == 2 else (20000.0 if c.load_rps <= 6.0 else 50000.0)
        truth[c] = Measurement(c, metrics={"request_throughput": c.load_rps, "p99_e2el_ms": p99}, gpu_seconds=c.tp * 100.0)
    return spec, space, truth


def test_capacity_only_overrates_a_configuration_with_a_bad_tail():
    spec, space, truth = paper_failure()
    caps = capacity_only_capacities(spec, space, truth.values())
    assert caps[("chat", 2)] == 4.0  # keeps up everywhere
    assert true_capacities(spec, space, truth.values())[("chat", 2)] == 2.0
    revealed = campaign("capacity-only", spec, space, truth)
    assert capacity_only_capacities(spec, space, revealed) == caps
    assert all(truth[m.cell].metric("request_throughput") >= 0 for m in revealed)
    assert len(revealed) < len(space.cells())


def test_capacity_only_capacity_drops_where_throughput_falls_behind():
    spec, space, truth = paper_failure()
    behind = Cell("chat", 4, 6.0)
    truth[behind] = Measurement(behind, metrics={"request_throughput": 4.5, "p99_e2el_ms": 20000.0}, gpu_seconds=400.0)
    assert capacity_only_capacities(spec, space, truth.values())[("chat", 4)] == 4.0

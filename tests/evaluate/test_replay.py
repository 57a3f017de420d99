import pytest
from evaluate_grids import SameCellThrice, SeededShuffle, SpaceOrder, make_truth

from fleetsieve.evaluate.replay import Revealer, replay
from fleetsieve.records import Cell

CAPS = {("a", 1): 2, ("a", 2): 3, ("b", 1): 1, ("b", 2): 4}
DEMANDS = {"a": 3.0, "b": 2.0}


def test_costs_accumulate_per_reveal_and_step_zero_is_free():
    truth = make_truth(CAPS, DEMANDS, 6)
    trace = replay(SpaceOrder(), truth, 0, 123)
    assert trace.steps[0].gpu_s == 0 and trace.steps[0].cell is None
    for before, after in zip(trace.steps, trace.steps[1:]):
        assert after.gpu_s == pytest.approx(before.gpu_s + 100.0 * after.cell.tp)


def test_single_repeat_monotone_replay_stops_once_settled():
    truth = make_truth(CAPS, DEMANDS, 6)
    trace = replay(SpaceOrder(), truth, 0, 123)
    last = trace.steps[-1]
    assert last.certified and last.is_oracle and trace.final_is_oracle
    assert len(trace.steps) - 1 <= len(truth.space.cells())
    assert not trace.slo_violation and not trace.capped


def test_strategy_that_stops_is_flagged_and_judged_at_its_end():
    truth = make_truth(CAPS, DEMANDS, 6)
    trace = replay(SameCellThrice(), truth, 0, 5)
    assert trace.stopped_by_strategy
    assert len(trace.steps) == 4  # three reveals of one cell
    assert trace.stop_index == 3 and not trace.steps[-1].certified


def test_re_proposed_cell_reveals_every_repeat_before_cycling():
    truth = make_truth(CAPS, DEMANDS, 6, repeats=3)
    revealer = Revealer(truth, 99)
    cell = Cell("a", 1, 0.5)
    shown = [revealer.reveal(cell).repeat for _ in range(6)]
    assert sorted(shown[:3]) == [0, 1, 2] and shown[3:] == shown[:3]


def test_repeat_order_depends_on_the_order_seed():
    truth = make_truth(CAPS, DEMANDS, 6, repeats=3)
    firsts = {Revealer(truth, seed).reveal(Cell("a", 1, 0.5)).repeat for seed in range(20)}
    assert len(firsts) > 1


def test_cell_outside_the_space_is_refused():
    truth = make_truth(CAPS, DEMANDS, 6)
    with pytest.raises(ValueError, match="not in the cell space"):
        Revealer(truth, 0).reveal(Cell("a", 1, 0.7))


def test_replay_is_deterministic_for_a_seed():
    truth = make_truth(CAPS, DEMANDS, 6)
    assert replay(SeededShuffle(), truth, 0, 7) == replay(SeededShuffle(), truth, 0, 7)
    orders = {tuple(s.cell for s in replay(SeededShuffle(), truth, 0, seed).steps[1:4]) for seed in range(5)}
    assert len(orders) > 1


def test_noisy_boundary_repeat_can_mislead_a_single_reveal():
    """One of three repeats at a boundary cell misses the SLO: the truth calls the cell infeasible,
    but a replay that sees only the good repeat proves too much and recommends an overload."""
    from fleetsieve.evaluate.truth import build_truth
    from fleetsieve.grid import Grid
    from fleetsieve.records import Measurement

    truth = make_truth({("a", 1): 2}, {"a": 2.0}, 3, repeats=3)
    bad = Cell("a", 1, 1.0)
    runs = [m if not (m.cell == bad and m.repeat == 2) else
            Measurement(bad, metrics={**m.metrics, "p99_e2el_ms": 90_000.0}, gpu_seconds=m.gpu_seconds, repeat=2)
            for m in truth.grid.measurements]
    noisy = build_truth(truth.spec, Grid(tuple(runs)))
    assert noisy.capacities[("a", 1)] == 0.5
    traces = [replay(SpaceOrder(), noisy, k, seed) for k, seed in enumerate(range(12))]
    assert not all(t.final_is_oracle for t in traces)
    assert any(t.slo_violation for t in traces)  # mean p99 at 1.0 req/s is (1.0 + 1.1 + 90) s / 3 > 30 s
    assert all(not t.capped for t in traces)


class CertificateBlindSpaceOrder(SpaceOrder):
    """SpaceOrder marked as ignoring the certificate, like random and exhaustive."""

    stops_on_its_own = False


def test_a_certificate_blind_strategy_is_judged_at_the_first_certificate():
    truth = make_truth(CAPS, DEMANDS, 6, repeats=3)  # repeats: no early exit, the replay runs to the end
    blind, own = replay(CertificateBlindSpaceOrder(), truth, 0, 1), replay(SpaceOrder(), truth, 0, 1)
    first_certified = next(i for i, s in enumerate(blind.steps) if s.certified)
    assert blind.stop_index == first_certified < len(blind.steps) - 1
    assert own.stop_index == len(own.steps) - 1

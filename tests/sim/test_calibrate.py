"""Calibration: re-timed schedules equal direct runs; the shipped fit meets its held-out target."""

import pytest

from fleetsieve.sim import calibrate as cal
from fleetsieve.sim import load_fitted_params


def test_fit_and_held_out_sets_are_disjoint_and_declared():
    points = cal.load_points()
    fit = [p for p in points if cal.is_fit_point(p)]
    held = [p for p in points if cal.is_held_out_point(p)]
    assert len(fit) == 60 and len(held) == 30
    assert not {id(p) for p in fit} & {id(p) for p in held}
    assert all(p.osl == 512 for p in held)


def test_retimed_schedule_equals_direct_simulation():
    point = next(p for p in cal.load_points() if cal.is_fit_point(p) and p.concurrency == 16 and p.isl == 1024)
    params = load_fitted_params()
    assert cal.schedule_for(point).metrics_ms(params) == pytest.approx(cal.evaluate_point(point, params), rel=1e-9)


@pytest.mark.slow
def test_shipped_params_held_out_error():
    held = [p for p in cal.load_points() if cal.is_held_out_point(p)]
    report = cal.error_report("held", held, load_fitted_params())
    assert report.ttft_median <= 12 and report.tpot_median <= 10, report.line()

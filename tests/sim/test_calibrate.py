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


def test_roofline_floor_by_hand_and_below_every_real_qwen_bf16_point():
    point = cal.Point("vllm", "Qwen/Qwen3-32B", "h100_sxm", "bf16", 2, 1024, 128, 8, 0.0, 0.0)
    layer_params = 64 * (5120 * (64 + 2 * 8) * 128 + 64 * 128 * 5120 + 3 * 5120 * 25600)
    flops_s = 2.0 * layer_params / 2 * 8 * (1 + 1024 / 128) / 989.4e12
    bytes_s = (layer_params * 2 / 2 + 8 * (1024 + 64) * (2 * 64 * 8 * 128 * 2) / 2) / 3.35e12
    assert cal.roofline_floor_ms(point) == pytest.approx(max(flops_s, bytes_s) * 1e3, rel=1e-12)
    real = [p for p in cal.load_points() if cal.is_fit_point(p) or cal.is_held_out_point(p)]
    assert all(p.tpot_ms > cal.roofline_floor_ms(p) for p in real)

"""Write the SYNTHETIC demo grid (not measurements): a smooth toy latency model per TP.

Run: python examples/synthetic/make_grid.py   (writes grid.csv next to this file)
Only the shape is realistic: per-GPU efficiency falls with TP, TP1 hits a memory cliff early.
"""

from pathlib import Path

from fleetsieve.grid import write_grid
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Measurement

SATURATION_RPS = {"chat": {1: 1.1, 2: 2.6, 4: 4.6, 8: 7.4}, "code": {1: 0.8, 2: 2.0, 4: 3.5, 8: 6.0}}
BASE_E2EL_MS = {"chat": 9000.0, "code": 4000.0}
DURATION_S = 300.0


def synthetic_run(workload: str, tp: int, load: float, repeat: int) -> Measurement:
    rho = load / SATURATION_RPS[workload][tp]
    slowdown = 1.0 / max(1.0 - rho, 0.02) if rho < 1 else 50.0 * rho
    e2el = BASE_E2EL_MS[workload] * (8 / (8 + tp)) * slowdown * (1 + 0.01 * repeat)
    ttft = 200.0 * slowdown
    metrics = {c: 0.0 for c in GRID_METRIC_COLUMNS}
    metrics.update({"request_throughput": min(load, SATURATION_RPS[workload][tp]),
                    "mean_e2el_ms": e2el / 2.5, "p50_e2el_ms": e2el / 3, "p90_e2el_ms": e2el / 1.5, "p99_e2el_ms": e2el,
                    "mean_ttft_ms": ttft / 3, "p50_ttft_ms": ttft / 4, "p90_ttft_ms": ttft / 2, "p99_ttft_ms": ttft,
                    "mean_tpot_ms": 30.0, "p50_tpot_ms": 29.0, "p90_tpot_ms": 35.0, "p99_tpot_ms": 45.0,
                    "mean_itl_ms": 30.0, "p99_itl_ms": 60.0})
    n = int(load * DURATION_S)
    return Measurement(Cell(workload, tp, load), metrics=metrics, gpu_seconds=tp * DURATION_S,
                       duration_s=DURATION_S, repeat=repeat, num_requests=n, completed=n,
                       extra={"source": "synthetic"})


def main() -> None:
    runs = [synthetic_run(w, tp, round(0.25 * k * tp ** 0.85, 3), 0)
            for w in SATURATION_RPS for tp in (1, 2, 4, 8) for k in range(1, 13)]
    write_grid(runs, Path(__file__).with_name("grid.csv"))


if __name__ == "__main__":
    main()

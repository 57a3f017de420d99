"""Parallel slots against time to decision and GPU-seconds, in simulated time.

Runs one replay campaign per slot count on the simulated-clock executor (each measurement
occupies its slot for its own duration), and prints, for 1/2/4/8 slots: wall-clock to a
certified decision, total GPU-seconds, and the extra GPU-seconds batching costs against one
slot. Usage::

    python benchmarks/bench_parallel.py [--spec SPEC --grid GRID] [--strategy sieve] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fleetsieve.backends.replay import ReplayBackend
from fleetsieve.campaign import Campaign
from fleetsieve.executors import SimulatedClockExecutor
from fleetsieve.grid import load_grid
from fleetsieve.plan import space_from_grid
from fleetsieve.spec import load_spec, spec_to_dict
from fleetsieve.store import CampaignSetup, MemoryStore, space_to_dict

REPO = Path(__file__).resolve().parents[1]


def one_run(spec_path: Path, grid_path: Path, strategy: str, seed: int, slots: int) -> dict[str, float]:
    spec, backend = load_spec(spec_path), ReplayBackend({"grid": str(grid_path)})
    space = space_from_grid(spec, load_grid(grid_path))
    setup = CampaignSetup(spec_to_dict(spec), space_to_dict(space), strategy, {}, "replay", {"grid": str(grid_path)}, seed)
    clock, started = SimulatedClockExecutor(), time.perf_counter()
    status = Campaign.open(MemoryStore(), setup).run(backend, clock, parallel=slots)
    return {"slots": slots, "hours": clock.clock_s / 3600, "gpu_s": status.gpu_seconds, "runs": status.measurements,
            "certified": status.decision.certified, "cpu_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=REPO / "examples" / "synthetic" / "fleet.toml")
    parser.add_argument("--grid", type=Path, default=REPO / "examples" / "synthetic" / "grid.csv")
    parser.add_argument("--strategy", default="sieve")
    parser.add_argument("--seeds", type=int, default=5, help="seeds averaged (replay repeat choice)")
    args = parser.parse_args()
    print(f"spec {args.spec.name}, grid {args.grid.name}, strategy {args.strategy}, simulated time, "
          f"mean over {args.seeds} seed(s)")
    print(f"{'slots':>5} {'runs':>6} {'wall-clock h':>13} {'speed-up':>9} {'GPU-s':>10} {'extra GPU-s':>12} "
          f"{'extra %':>8} {'certified':>9}")
    base = None
    for slots in (1, 2, 4, 8):
        rows = [one_run(args.spec, args.grid, args.strategy, seed, slots) for seed in range(args.seeds)]
        mean = {k: sum(r[k] for r in rows) / len(rows) for k in ("hours", "gpu_s", "runs")}
        base = base or mean
        extra = mean["gpu_s"] - base["gpu_s"]
        print(f"{slots:>5} {mean['runs']:>6.1f} {mean['hours']:>13.2f} {base['hours'] / mean['hours']:>8.2f}x "
              f"{mean['gpu_s']:>10.0f} {extra:>12.0f} {100 * extra / base['gpu_s']:>7.1f}% "
              f"{sum(r['certified'] for r in rows):>5}/{len(rows)}")


if __name__ == "__main__":
    main()

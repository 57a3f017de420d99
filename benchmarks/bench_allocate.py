"""Allocator speed at the issue's size: 10 workloads x 8 TP options x 20 load levels, G = 1024.

Run: python benchmarks/bench_allocate.py
Prints per-solve wall time (median and p90 over random instances) against the 50 ms target.
Capacities are drawn from 20 load levels per (workload, TP), as a grid would give them.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from fleetsieve.allocate import solve

TARGET_MS = 50.0


def instance(rng: np.random.Generator, mixed: bool):
    tps = [1, 2, 3, 4, 5, 6, 7, 8]
    levels = np.linspace(0.25, 5.0, 20)
    caps = {(f"w{i}", tp): float(rng.choice(levels) * tp ** 0.9) for i in range(10) for tp in tps}
    demands = {f"w{i}": float(rng.uniform(20, 120)) for i in range(10)}
    return demands, caps


def time_solves(mixed: bool, n: int = 40) -> list[float]:
    rng = np.random.default_rng(0)
    times = []
    for _ in range(n):
        demands, caps = instance(rng, mixed)
        t0 = time.perf_counter()
        solve(demands, caps, 1024, mixed=mixed)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    for mixed in (False, True):
        t = sorted(time_solves(mixed))
        med, p90 = statistics.median(t), t[int(0.9 * len(t)) - 1]
        print(f"mixed={mixed!s:5}  median {med:7.2f} ms  p90 {p90:7.2f} ms  "
              f"target {TARGET_MS:.0f} ms  median/target = {med / TARGET_MS:.3f}")


if __name__ == "__main__":
    main()

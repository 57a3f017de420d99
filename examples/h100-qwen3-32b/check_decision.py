"""Check that the shipped spec + grid make a non-trivial decision (run from the repo root):

    python examples/h100-qwen3-32b/check_decision.py

(a) at least two workloads pick different TP degrees;
(b) the best TP of some workload changes when its demand doubles;
(c) capacity-only failure: some configuration's saturation throughput exceeds its SLO capacity.
"""

from __future__ import annotations

from pathlib import Path

from fleetsieve.grid import load_grid
from fleetsieve.plan import oracle_allocation, oracle_capacities
from fleetsieve.records import Status
from fleetsieve.spec import load_spec

HERE = Path(__file__).resolve().parent


def tps(alloc) -> dict[str, tuple[int, ...]]:
    return {w: tuple(a.tp for a in parts if a.replicas > 0) for w, parts in alloc.assignments.items()}


def saturation_rps(grid, workload: str, tp: int) -> float:
    """Highest mean measured request throughput over the load levels (OK runs)."""
    best = 0.0
    for level in grid.levels(workload, tp):
        runs = [m for m in grid.runs(grid.cells()[0].__class__(workload, tp, level)) if m.status is Status.OK]
        if runs:
            best = max(best, sum(m.metric("request_throughput") for m in runs) / len(runs))
    return best


def main() -> None:
    spec, grid = load_spec(HERE / "fleet.toml"), load_grid(HERE / "grid.csv")
    base = tps(oracle_allocation(spec, grid))
    print("(a) allocation:", {w: (t, [a.replicas for a in p]) for (w, t), p in
                               zip(base.items(), oracle_allocation(spec, grid).assignments.values())})
    print("    distinct TPs across workloads:", len({t for t in base.values()}) > 1)
    for name, wl in spec.workloads.items():
        doubled = spec.model_copy(update={"workloads": {**spec.workloads,
                                                         name: wl.model_copy(update={"demand_rps": 2 * wl.demand_rps})}})
        after = tps(oracle_allocation(doubled, grid))[name]
        print(f"(b) {name}: demand {wl.demand_rps:g} -> TP {base[name]}; demand {2 * wl.demand_rps:g} -> TP {after}"
              f"  changed: {after != base[name]}")
    kappa = oracle_capacities(spec, grid)
    for (workload, tp), cap in sorted(kappa.items()):
        sat = saturation_rps(grid, workload, tp)
        print(f"(c) {workload} TP{tp}: SLO capacity {cap:6.2f} req/s, saturation throughput {sat:6.2f} req/s"
              f"{'   <- capacity-only failure' if sat > cap * 1.05 else ''}")


if __name__ == "__main__":
    main()

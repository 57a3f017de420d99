"""The paper-style evaluation: every strategy over 200 reveal orders of the shipped grid.

Run: python benchmarks/bench_compare.py [--grid-dir examples/h100-qwen3-32b] [--orders 200] [--json OUT]
     [--single-repeat]   (keep repeat 0 of every cell and judge by the plain rule: the paper's setting)
Prints the savings table (mean saving vs random with its 95% paired bootstrap CI, the fixed
order-0 comparison, per workload), the hindsight floor, the wrong-decision losses, and the wall
time. Uses the shipped H100 grid when it exists, else the synthetic demo grid (and says so).
The issue's targets are printed next to the figures; nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from fleetsieve.evaluate.compare import CompareOptions, run_compare, strategy_names
from fleetsieve.evaluate.experiment import registered_factories
from fleetsieve.evaluate.report import strategy_json, to_json
from fleetsieve.grid import Grid, load_grid
from fleetsieve.spec import load_spec
from fleetsieve.strategies import STRATEGIES

REPO = Path(__file__).resolve().parents[1]
SHIPPED, FALLBACK = REPO / "examples" / "h100-qwen3-32b", REPO / "examples" / "synthetic"
#: The published design's figures (issue 3): mean saving vs random over 200 orders and its CI.
PAPER_SAVING, PAPER_CI = 0.054, (0.035, 0.072)


def _pct(x: float) -> str:
    return "   n/a" if x is None or not math.isfinite(x) else f"{100 * x:6.1f}%"


def _print_savings(result) -> None:
    exp = result.experiment
    savings = result.savings.get("cost_to_oracle_gpu_s", {})
    to_cert = result.savings.get("cost_to_certificate_gpu_s", {})
    print(f"{'strategy':<14}{'GPU-s->oracle':>14}{'GPU-s->cert':>13}{'saving':>9}{'95% CI':>20}{'order 0':>9}"
          f"{'save->cert':>11}{'final=oracle':>13}{'SLO viol':>9}")
    for name in exp.strategies:
        j, s, c = strategy_json(exp, name), savings.get(name), to_cert.get(name)
        ci = f"[{_pct(s.ci95[0])}, {_pct(s.ci95[1])}]" if s else ""
        print(f"{name:<14}{j['cost_to_oracle_gpu_s']['mean']:>14,.0f}{j['cost_to_certificate_gpu_s']['mean']:>13,.0f}"
              f"{_pct(s.mean) if s else '':>9}{ci:>20}{_pct(s.fixed_order) if s else '':>9}{_pct(c.mean) if c else '':>11}"
              f"{_pct(j['final_is_oracle_rate']):>13}{j['slo_violations']:>9}")


def _print_rest(result) -> None:
    for w, r in result.per_workload.items():
        s = r.savings.get("cost_to_oracle_gpu_s", {})
        row = "  ".join(f"{n} {_pct(v.mean).strip()} [{_pct(v.ci95[0]).strip()}, {_pct(v.ci95[1]).strip()}]" for n, v in s.items() if n != "random")
        print(f"workload {w:<10} {row}   hindsight {r.hindsight.cost_gpu_s:,.0f} GPU-s")
    h = result.hindsight
    print(f"exhaustive {result.experiment.truth.exhaustive_gpu_s:,.0f} GPU-s; hindsight certificate "
          f"{h.cost_gpu_s:,.0f} GPU-s ({'exact' if h.exact else 'PROVEN LOWER BOUND'}, {h.nodes} nodes, {h.seconds:.1f} s)")
    for x in (*result.losses, result.capacity_only.loss):
        print(f"loss {x.label:<28} served {x.served_rps:.3f} req/s (worst {x.max_served_rps:.3f}), "
              f"fulfilment {x.fulfilment_pp:.1f} pp (worst {x.max_fulfilment_pp:.1f}), SLO-violating {_pct(x.slo_violation_rate).strip()}")
    for p in result.capacity_only.points:
        tails = ", ".join(f"{k} true {v:,.0f} ms vs SLO {b:,.0f} ms" for k, (v, b) in p.tails.items())
        print(f"capacity-only picks {p.workload} TP{p.tp} x{p.replicas} at {p.load_rps:.3g} req/s/replica: {tails}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid-dir", type=Path, default=SHIPPED if (SHIPPED / "grid.csv").exists() else FALLBACK)
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--json", type=Path)
    parser.add_argument("--single-repeat", action="store_true", help="repeat 0 only, plain rule (one run per cell)")
    args = parser.parse_args()
    spec, grid = load_spec(args.grid_dir / "fleet.toml"), load_grid(args.grid_dir / "grid.csv")
    if args.single_repeat:
        grid = Grid(tuple(m for m in grid.measurements if m.repeat == 0), f"{grid.source} (repeat 0)")
    names = strategy_names(None, list(STRATEGIES))
    print(f"grid {args.grid_dir.relative_to(REPO) if args.grid_dir.is_relative_to(REPO) else args.grid_dir} · "
          f"{args.orders} orders · seed {args.seed} · {args.workers} workers · strategies {', '.join(names)}")
    start = time.perf_counter()
    result = run_compare(spec, grid, registered_factories(names), CompareOptions(args.orders, args.seed, None, args.workers))
    wall = time.perf_counter() - start
    print(f"verdict rule: {result.rule_name}")
    _print_savings(result)
    _print_rest(result)
    print(f"paper (published design): saving {PAPER_SAVING:.1%} [{PAPER_CI[0]:.1%}, {PAPER_CI[1]:.1%}]; "
          f"issue target: mean >= 50%, CI low >= 40%, ahead on every workload, 0 SLO violations")
    print(f"wall time {wall:.1f} s for {args.orders} orders x {len(names)} strategies (+ per-workload runs)")
    if args.json:
        args.json.write_text(json.dumps(to_json(result), indent=1))


if __name__ == "__main__":
    main()

"""The outputs of ``fleetsieve compare``: the JSON document and the Rich tables."""

from __future__ import annotations

import math
from statistics import fmean, median
from typing import Any, Mapping

from rich.console import Group
from rich.table import Table

from fleetsieve.evaluate.bootstrap import Saving
from fleetsieve.evaluate.compare import BASELINE, CompareResult
from fleetsieve.evaluate.experiment import Experiment
from fleetsieve.evaluate.hindsight import HindsightCertificate
from fleetsieve.evaluate.loss import CapacityOnlyDecision, Loss


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _distribution(values: list[float]) -> dict[str, Any]:
    return {"mean": fmean(values), "median": median(values), "values": values}


def strategy_json(experiment: Experiment, name: str) -> dict[str, Any]:
    rows = experiment.outcomes[name]
    n = len(rows)
    return {
        "cost_to_oracle_gpu_s": _distribution([o.cost_to_oracle_gpu_s for o in rows]),
        "cost_to_certificate_gpu_s": _distribution([o.cost_to_certificate_gpu_s for o in rows]),
        "final_is_oracle_rate": sum(o.final_is_oracle for o in rows) / n,
        "slo_violations": sum(o.slo_violation for o in rows),
        "reached_oracle_rate": sum(o.reached_oracle for o in rows) / n,
        "certified_rate": sum(o.certified for o in rows) / n,
        "stopped_by_strategy_rate": sum(o.stopped_by_strategy for o in rows) / n,
        "capped": sum(o.capped for o in rows),
        "mean_reveals": fmean(o.reveals for o in rows),
    }


def _saving_json(s: Saving, fixed: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"mean": s.mean, "ci95": list(s.ci95)}
    if fixed:
        out["fixed_order"] = s.fixed_order
    return out


def hindsight_json(h: HindsightCertificate) -> dict[str, Any]:
    return {"gpu_s": h.cost_gpu_s, "exact": h.exact, "kind": "exact" if h.exact else "proven lower bound",
            "best_found_gpu_s": h.best_found_gpu_s, "cells": [c.to_dict() for c in h.cells],
            "search_nodes": h.nodes, "search_seconds": h.seconds}


def loss_json(loss: Loss) -> dict[str, Any]:
    return {"label": loss.label, "served_rps": loss.served_rps, "fulfilment_pp": loss.fulfilment_pp,
            "max_served_rps": loss.max_served_rps, "max_fulfilment_pp": loss.max_fulfilment_pp,
            "slo_violation_rate": loss.slo_violation_rate}


def capacity_only_json(co: CapacityOnlyDecision, mixed: bool) -> dict[str, Any]:
    points = [{"workload": p.workload, "tp": p.tp, "replicas": p.replicas, "load_rps": p.load_rps, "level_rps": p.level_rps,
               "tails": {k: {"true_ms": v, "slo_ms": b} for k, (v, b) in p.tails.items()}, "violated": p.violated}
              for p in co.points]
    return {**co.allocation.to_json(mixed), "true_min_fulfilment": co.true_objective.min_fulfilment,
            "true_served_rps": co.true_objective.served_rps, "operating_points": points, "loss": loss_json(co.loss)}


def to_json(result: CompareResult) -> dict[str, Any]:
    """The ``--json`` document (keys documented in docs/evaluation.md)."""
    exp, truth = result.experiment, result.experiment.truth
    savings = result.savings.get("cost_to_oracle_gpu_s", {})
    doc = {
        "orders": exp.orders, "seed": exp.seed, "verdict_rule": result.rule_name, "grid_repeats": truth.max_repeats,
        "strategies": {n: strategy_json(exp, n) for n in exp.strategies},
        "savings_vs_random": {n: _saving_json(s) for n, s in savings.items()},
        "savings_vs_random_to_certificate": {n: _saving_json(s) for n, s in result.savings.get("cost_to_certificate_gpu_s", {}).items()},
        "per_workload": {w: {"savings_vs_random": {n: _saving_json(s, fixed=False) for n, s in r.savings.get("cost_to_oracle_gpu_s", {}).items()},
                             "hindsight_certificate_gpu_s": r.hindsight.cost_gpu_s,
                             "exhaustive_gpu_s": r.experiment.truth.exhaustive_gpu_s}
                         for w, r in result.per_workload.items()},
        "hindsight_certificate_gpu_s": result.hindsight.cost_gpu_s,
        "hindsight_certificate": hindsight_json(result.hindsight),
        "exhaustive_gpu_s": truth.exhaustive_gpu_s,
        "oracle": truth.oracle.to_json(truth.spec.mixed),
        "wrong_decision_loss": [loss_json(x) for x in result.losses],
        "capacity_only": capacity_only_json(result.capacity_only, truth.spec.mixed),
    }
    return _clean(doc)


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.1f}%"


def _saving_cell(s: Saving | None) -> str:
    return "-" if s is None else f"{_pct(s.mean)} [{_pct(s.ci95[0])}, {_pct(s.ci95[1])}]"


def strategies_table(result: CompareResult) -> Table:
    exp = result.experiment
    table = Table(title=f"Strategies over {exp.orders} reveal orders (seed {exp.seed}, verdicts: {result.rule_name})")
    for col in ("strategy", "GPU-s to oracle mean", "median", "GPU-s to certificate mean", "final = oracle",
                "SLO-violating", "saving vs random [95% CI]", "order 0", "saving to certificate"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    to_oracle, to_cert = result.savings.get("cost_to_oracle_gpu_s", {}), result.savings.get("cost_to_certificate_gpu_s", {})
    for name in exp.strategies:
        j = strategy_json(exp, name)
        fixed = to_oracle[name].fixed_order if name in to_oracle else math.nan
        table.add_row(name, f"{j['cost_to_oracle_gpu_s']['mean']:,.0f}", f"{j['cost_to_oracle_gpu_s']['median']:,.0f}",
                      f"{j['cost_to_certificate_gpu_s']['mean']:,.0f}", _pct(j["final_is_oracle_rate"]), str(j["slo_violations"]),
                      _saving_cell(to_oracle.get(name)), _pct(fixed), _saving_cell(to_cert.get(name)))
    h = result.hindsight
    label = "hindsight-minimal certificate" if h.exact else "hindsight certificate, PROVEN LOWER BOUND"
    table.caption = f"exhaustive {exp.truth.exhaustive_gpu_s:,.0f} GPU-s · {label} {h.cost_gpu_s:,.0f} GPU-s · baseline '{BASELINE}'"
    return table


def per_workload_table(result: CompareResult) -> Table:
    names = result.experiment.strategies
    table = Table(title="Saving vs random per workload (same budget), GPU-s to oracle")
    table.add_column("workload")
    for n in names:
        table.add_column(n, justify="right")
    table.add_column("hindsight GPU-s", justify="right")
    for w, r in result.per_workload.items():
        s = r.savings.get("cost_to_oracle_gpu_s", {})
        table.add_row(w, *[_saving_cell(s.get(n)) for n in names], f"{r.hindsight.cost_gpu_s:,.0f}")
    return table


def loss_table(result: CompareResult) -> Table:
    table = Table(title="Wrong-decision loss vs the oracle (mean over orders; worst in brackets)")
    for col in ("decision from", "served req/s lost", "fulfilment pp lost", "SLO-violating"):
        table.add_column(col, justify="left" if col == "decision from" else "right")
    for x in (*result.losses, result.capacity_only.loss):
        table.add_row(x.label, f"{x.served_rps:.3f} [{x.max_served_rps:.3f}]", f"{x.fulfilment_pp:.1f} [{x.max_fulfilment_pp:.1f}]",
                      _pct(x.slo_violation_rate))
    return table


def capacity_only_table(co: CapacityOnlyDecision) -> Table:
    table = Table(title="What capacity-only sizing would choose, and its true tails at the operating load")
    for col in ("workload", "tp", "replicas", "load req/s/replica", "grid level", "metric", "true ms", "SLO ms", "violated"):
        table.add_column(col, justify="left" if col in ("workload", "metric") else "right")
    for p in co.points:
        for k, (value, bound) in p.tails.items():
            table.add_row(p.workload, str(p.tp), str(p.replicas), f"{p.load_rps:.3g}", f"{p.level_rps}", k,
                          f"{value:,.0f}", f"{bound:,.0f}", "YES" if value > bound or not math.isfinite(value) else "no")
    obj = co.true_objective
    table.caption = f"true min fulfilment {obj.min_fulfilment:.3f} · true served {obj.served_rps:.3f} req/s"
    return table


def render(result: CompareResult) -> Group:
    parts = [strategies_table(result)]
    if result.per_workload:
        parts.append(per_workload_table(result))
    parts += [loss_table(result), capacity_only_table(result.capacity_only)]
    return Group(*parts)


def noise_summary(result: CompareResult) -> Mapping[str, float]:
    """How often each strategy's final decision is the oracle's (the noisy-replay figure on repeats)."""
    return {n: strategy_json(result.experiment, n)["final_is_oracle_rate"] for n in result.experiment.strategies}

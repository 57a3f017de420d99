"""PNG plots of a campaign: latency against load per TP (with SLOs and verdicts), and gap against GPU-seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from fleetsieve.knowledge import Knowledge  # noqa: E402
from fleetsieve.records import Measurement, Verdict  # noqa: E402

#: How each verdict is drawn: (marker, face colour, label).
VERDICT_STYLE = {
    Verdict.FEASIBLE: ("o", "full", "feasible"),
    Verdict.INFEASIBLE: ("X", "full", "infeasible"),
    Verdict.INDETERMINATE: ("D", "none", "indeterminate"),
    Verdict.UNMEASURED: (".", "none", "no usable run"),
}


@dataclass(frozen=True)
class GapPoint:
    """The decision gap after ``measurements`` runs costing ``gpu_seconds`` in all."""

    measurements: int
    gpu_seconds: float
    fulfilment: float
    served_rps: float


def gap_trace(knowledge: Knowledge, told: Sequence[Measurement], max_points: int = 200) -> list[GapPoint]:
    """The gap after each prefix of ``told`` (thinned to about ``max_points`` decisions)."""
    step = max(1, math.ceil(len(told) / max_points))
    marks = sorted(set(range(0, len(told) + 1, step)) | {len(told)})
    spent = [0.0]
    for m in told:
        spent.append(spent[-1] + m.gpu_seconds)
    points = []
    for k in marks:
        gap = Knowledge(knowledge.spec, knowledge.space, told[:k], knowledge.verdict_rule).decision().gap
        points.append(GapPoint(k, spent[k], gap.fulfilment, gap.served_rps))
    return points


def _metric_points(knowledge: Knowledge, workload: str, tp: int, metric: str) -> list[tuple[float, float, Verdict]]:
    out = []
    for cell, runs in sorted(knowledge.runs.items()):
        if cell.config == (workload, tp):
            verdict = knowledge.verdict(cell)
            out += [(cell.load_rps, m.metric(metric), verdict) for m in runs]
    return out


def _draw_metric(ax, knowledge: Knowledge, workload: str, metric: str, bound: float) -> None:
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ceiling = bound * 2.0
    for i, tp in enumerate(knowledge.spec.tp_degrees):
        points = _metric_points(knowledge, workload, tp, metric)
        finite = sorted((x, y) for x, y, _ in points if math.isfinite(y))
        colour = colours[i % len(colours)]
        if finite:
            ax.plot(*zip(*finite), color=colour, alpha=0.5, linewidth=1, label=f"TP{tp}")
            ceiling = max(ceiling, max(y for _, y in finite) * 1.2)
        for x, y, verdict in points:
            marker, fill, _ = VERDICT_STYLE[verdict]
            ax.plot([x], [y if math.isfinite(y) else ceiling], marker=marker, fillstyle=fill, color=colour,
                    markersize=7, linestyle="none")
    ax.axhline(bound, color="black", linestyle="--", linewidth=1.2, label=f"SLO {bound:g} ms")
    ax.set_yscale("log")
    ax.set_xlabel("offered load per replica (req/s)")
    ax.set_ylabel(f"{metric} (ms)")
    ax.grid(True, which="both", alpha=0.25)


def _verdict_legend(ax) -> None:
    handles = [plt.Line2D([], [], marker=m, fillstyle=f, color="grey", linestyle="none", label=label)
               for m, f, label in VERDICT_STYLE.values()]
    handles.append(plt.Line2D([], [], color="grey", linestyle="none", label="(no metric: drawn at the top)"))
    # Outside the axes, so no legend hides a measured point.
    first = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.add_artist(first)
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, title="verdict",
              title_fontsize=8)


def plot_workload(knowledge: Knowledge, workload: str, path: Path) -> Path:
    """Latency against load, one panel per SLO metric of ``workload``, one colour per TP."""
    slo = knowledge.spec.workloads[workload].slo
    fig, axes = plt.subplots(len(slo), 1, figsize=(9.5, 3.6 * len(slo)), squeeze=False)
    for ax, (metric, bound) in zip(axes[:, 0], sorted(slo.items())):
        _draw_metric(ax, knowledge, workload, metric, bound)
        ax.set_title(f"{workload}: {metric} against load")
    _verdict_legend(axes[0, 0])
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_gap(points: Sequence[GapPoint], path: Path) -> Path:
    """The decision gap (fulfilment and served req/s) against GPU-seconds spent."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 5.5), sharex=True)
    xs = [p.gpu_seconds for p in points]
    top.step(xs, [p.fulfilment for p in points], where="post", color="tab:blue")
    top.set_ylabel("gap: min fulfilment")
    top.set_title("decision gap against GPU-seconds spent")
    bottom.step(xs, [p.served_rps for p in points], where="post", color="tab:orange")
    bottom.set_ylabel("gap: served req/s")
    bottom.set_xlabel("GPU-seconds spent")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path

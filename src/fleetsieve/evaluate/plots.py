"""PNG plots of a comparison (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from fleetsieve.evaluate.compare import CompareResult  # noqa: E402


def cost_distribution(result: CompareResult, path: Path) -> None:
    """Box plot of GPU-s to oracle per strategy, with the hindsight floor and the exhaustive cost."""
    exp = result.experiment
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.boxplot([exp.costs(n) for n in exp.strategies], showmeans=True)
    ax.set_xticks(range(1, len(exp.strategies) + 1), exp.strategies)
    if math.isfinite(result.hindsight.cost_gpu_s):
        label = "hindsight certificate" + ("" if result.hindsight.exact else " (lower bound)")
        ax.axhline(result.hindsight.cost_gpu_s, color="tab:green", linestyle="--", label=label)
    ax.axhline(exp.truth.exhaustive_gpu_s, color="tab:red", linestyle=":", label="exhaustive grid")
    ax.set_ylabel("GPU-seconds to the oracle decision")
    ax.set_title(f"Cost distribution over {exp.orders} reveal orders")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gap_vs_cost(result: CompareResult, path: Path) -> None:
    """Served-rps decision gap against GPU-s spent, for the first few orders."""
    traces = result.experiment.traces
    orders = max((len(t) for t in traces.values()), default=0)
    fig, axes = plt.subplots(1, max(orders, 1), figsize=(5 * max(orders, 1), 4), squeeze=False, sharey=True)
    for k in range(orders):
        ax = axes[0][k]
        for name, ts in traces.items():
            steps = ts[k].steps
            ax.step([s.gpu_s for s in steps], [s.gap_served_rps for s in steps], where="post", label=name)
        ax.axhline(result.experiment.truth.spec.tolerance.served_rps, color="grey", linestyle=":")
        ax.set_title(f"order {k}")
        ax.set_xlabel("GPU-seconds spent")
    axes[0][0].set_ylabel("decision gap (served req/s)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def savings_with_ci(result: CompareResult, path: Path) -> None:
    """Mean saving vs random with its 95% bootstrap CI, overall and per workload."""
    groups = {"all": result.savings.get("cost_to_oracle_gpu_s", {})}
    groups.update({w: r.savings.get("cost_to_oracle_gpu_s", {}) for w, r in result.per_workload.items()})
    names = result.experiment.strategies
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(len(groups), 1)
    for g, (label, savings) in enumerate(groups.items()):
        xs = [i + g * width for i, n in enumerate(names) if n in savings]
        means = [100 * savings[n].mean for n in names if n in savings]
        errs = [[100 * (savings[n].mean - savings[n].ci95[0]) for n in names if n in savings],
                [100 * (savings[n].ci95[1] - savings[n].mean) for n in names if n in savings]]
        ax.bar(xs, means, width, yerr=errs, capsize=3, label=label)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("saving vs random, % (95% bootstrap CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_plots(result: CompareResult, directory: Path) -> list[Path]:
    """Write the three PNGs into ``directory`` (created if needed); returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "cost_distribution.png", directory / "gap_vs_gpu_s.png", directory / "savings_ci.png"]
    for draw, path in zip((cost_distribution, gap_vs_cost, savings_with_ci), paths):
        draw(result, path)
    return paths

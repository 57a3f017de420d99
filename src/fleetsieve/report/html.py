"""A self-contained HTML page for a campaign: plots inlined as base64, the final allocation as a table."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Sequence

from fleetsieve.campaign import CampaignStatus
from fleetsieve.knowledge import Knowledge

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 60em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.ok { color: #1a7f37; font-weight: bold; } .no { color: #b35900; font-weight: bold; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
"""


def inline_png(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _row(cells: Sequence[object], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in cells) + "</tr>"


def allocation_html(status: CampaignStatus, knowledge: Knowledge) -> str:
    """The conservative allocation, with each configuration's proven capacity."""
    bounds = knowledge.bounds()
    rows = [_row(("workload", "demand req/s", "TP", "replicas", "GPUs", "proven capacity req/s/replica"), "th")]
    for workload, wl in knowledge.spec.workloads.items():
        parts = [a for a in status.decision.conservative.assignments.get(workload, ()) if a.replicas > 0]
        for a in parts:
            rows.append(_row((workload, f"{wl.demand_rps:g}", a.tp, a.replicas, a.gpus, f"{bounds[(workload, a.tp)].lo:g}")))
        if not parts:
            rows.append(_row((workload, f"{wl.demand_rps:g}", "-", 0, 0, "-")))
    return "<table>" + "".join(rows) + "</table>"


def summary_html(status: CampaignStatus, gpu_budget: int) -> str:
    d = status.decision
    verdict = '<span class="ok">certified</span>' if d.certified else '<span class="no">not certified</span>'
    obj = d.conservative.objective
    items = [
        f"Decision: {verdict} (gap in min fulfilment {d.gap.fulfilment:.4f}, in served req/s {d.gap.served_rps:.3f})",
        f"Guaranteed min fulfilment {obj.min_fulfilment:.3f}, served {obj.served_rps:.3f} req/s, "
        f"{d.conservative.gpus_used} of {gpu_budget} GPUs",
        f"{status.measurements} measurements, {status.gpu_seconds:,.0f} GPU-seconds, {status.in_flight} still in flight",
    ]
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def render_page(title: str, status: CampaignStatus, knowledge: Knowledge,
                workload_pngs: dict[str, Path], gap_png: Path) -> str:
    """The whole page as one string; nothing outside it is referenced."""
    parts = [f"<h1>{html.escape(title)}</h1>", summary_html(status, knowledge.spec.gpu_budget),
             "<h2>Final allocation (conservative: guaranteed by the measurements)</h2>",
             allocation_html(status, knowledge), "<h2>Decision gap</h2>", inline_png(gap_png, "decision gap")]
    for workload, png in workload_pngs.items():
        parts += [f"<h2>Workload {html.escape(workload)}</h2>", inline_png(png, f"latency against load: {workload}")]
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")

"""Campaign reports: PNG plots, a self-contained HTML page, and the live progress display."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fleetsieve.campaign import Campaign
from fleetsieve.errors import InputError
from fleetsieve.report.html import render_page
from fleetsieve.report.live import LiveProgress, allocation_lines, status_table
from fleetsieve.report.plots import GapPoint, gap_trace, plot_gap, plot_workload


@dataclass(frozen=True)
class ReportFiles:
    """What ``write_report`` wrote."""

    html: Path
    pngs: tuple[Path, ...]


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "workload"


def write_report(campaign: Campaign, out_dir: str | Path, title: str | None = None) -> ReportFiles:
    """Write ``gap.png``, ``latency_<workload>.png`` and ``report.html`` (images inlined) into ``out_dir``."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(str(out), f"cannot create the report folder ({err.strerror})") from None
    knowledge = campaign.knowledge()
    status = campaign.status()
    gap_png = plot_gap(gap_trace(knowledge, campaign.measurements()), out / "gap.png")
    workload_pngs = {w: plot_workload(knowledge, w, out / f"latency_{_safe_name(w)}.png") for w in campaign.spec.workloads}
    page = render_page(title or f"FleetSieve campaign report: {campaign.store.url}", status, knowledge, workload_pngs, gap_png)
    html_path = out / "report.html"
    html_path.write_text(page, encoding="utf-8")
    return ReportFiles(html_path, (gap_png, *workload_pngs.values()))


__all__ = ["GapPoint", "LiveProgress", "ReportFiles", "allocation_lines", "gap_trace", "plot_gap", "plot_workload",
           "status_table", "write_report"]

"""The live progress display of a running campaign (Rich), written to stderr so ``--json`` stays clean."""

from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from fleetsieve.campaign import CampaignStatus


def allocation_lines(status: CampaignStatus) -> list[str]:
    """The conservative allocation, one ``workload: replicas x TPn`` line per workload."""
    lines = []
    for workload, parts in status.decision.conservative.assignments.items():
        text = " + ".join(f"{a.replicas} x TP{a.tp}" for a in parts if a.replicas > 0) or "nothing proven yet"
        lines.append(f"{workload}: {text}")
    return lines


def status_table(status: CampaignStatus, title: str = "FleetSieve campaign") -> Table:
    """One table with what was spent, what was measured, the decision gap and the allocation."""
    d = status.decision
    table = Table(title=title, show_header=False, min_width=48)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("GPU-seconds spent", f"{status.gpu_seconds:,.0f}")
    table.add_row("cells measured", str(status.measurements))
    table.add_row("in flight", str(status.in_flight))
    table.add_row("gap: min fulfilment", f"{d.gap.fulfilment:.4f}")
    table.add_row("gap: served req/s", f"{d.gap.served_rps:.3f}")
    table.add_row("guaranteed fulfilment", f"{d.conservative.objective.min_fulfilment:.3f}")
    table.add_row("certified", "yes" if d.certified else "not yet")
    for i, line in enumerate(allocation_lines(status)):
        table.add_row("allocation" if i == 0 else "", line)
    return table


class LiveProgress:
    """A Rich live display fed by ``Campaign.run(progress=...)``; use it as a context manager."""

    def __init__(self, console: Console | None = None, title: str = "FleetSieve campaign") -> None:
        self.console = console or Console(stderr=True)
        self.title = title
        self.updates = 0
        self._live = Live(Text("starting ..."), console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> "LiveProgress":
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)

    def update(self, status: CampaignStatus) -> None:
        self.updates += 1
        self._live.update(Group(status_table(status, self.title)))

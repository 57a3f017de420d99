"""Campaign report: PNGs, a self-contained HTML page that renders in headless Chromium, and the live display."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from rich.console import Console
from typer.testing import CliRunner

from campaign_support import GRID, TinyBisection, replay_setup
from fleetsieve.backends.replay import ReplayBackend
from fleetsieve.campaign import Campaign
from fleetsieve.cli import app
from fleetsieve.report import LiveProgress, gap_trace, status_table, write_report
from fleetsieve.store import MemoryStore, SQLiteStore

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'c.db'}"
    store = SQLiteStore(url)
    campaign = Campaign.open(store, replay_setup(), TinyBisection())
    campaign.run(ReplayBackend({"grid": str(GRID)}))
    yield campaign
    store.close()


def test_report_writes_pngs_and_a_self_contained_page(finished, tmp_path):
    files = write_report(finished, tmp_path / "out")
    assert {p.name for p in files.pngs} == {"gap.png", "latency_chat.png", "latency_code.png"}
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in files.pngs)
    page = files.html.read_text()
    assert page.count('src="data:image/png;base64,') == 3
    assert not re.search(r'(src|href)="(?!data:)', page), "the page must not reference any other file"
    assert "certified" in page and "Final allocation" in page and "chat" in page


def test_gap_trace_starts_open_and_ends_at_the_final_gap(finished):
    points = gap_trace(finished.knowledge(), finished.measurements())
    assert points[0].measurements == 0 and points[0].gpu_seconds == 0.0
    assert points[-1].measurements == len(finished.measurements())
    assert points[-1].fulfilment == finished.decision().gap.fulfilment
    assert [p.gpu_seconds for p in points] == sorted(p.gpu_seconds for p in points)


def test_gap_trace_is_thinned_for_long_campaigns(finished):
    points = gap_trace(finished.knowledge(), finished.measurements(), max_points=4)
    assert len(points) <= 6 and points[-1].measurements == len(finished.measurements())


def test_report_of_an_empty_campaign(tmp_path):
    campaign = Campaign.open(MemoryStore(), replay_setup(), TinyBisection())
    files = write_report(campaign, tmp_path)
    assert "not certified" in files.html.read_text()


def test_report_cli(finished, tmp_path):
    result = CliRunner().invoke(app, ["report", finished.store.url, "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "report.html").exists()


def test_live_display_shows_spend_measured_gap_and_allocation(finished):
    console = Console(record=True, width=100, force_terminal=False)
    with LiveProgress(console=console) as live:
        live.update(finished.status())
    text = console.export_text()
    for needle in ("GPU-seconds spent", "cells measured", "gap: min fulfilment", "allocation", "chat:"):
        assert needle in text
    assert live.updates == 1 and "yes" in text  # certified


def test_status_table_of_a_fresh_campaign():
    status = Campaign.open(MemoryStore(), replay_setup(), TinyBisection()).status()
    console = Console(record=True, width=100)
    console.print(status_table(status))
    text = console.export_text()
    assert "not yet" in text and "nothing proven yet" in text


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"{CHROMIUM} is absent (Debian package `chromium`)")
def test_html_renders_in_headless_chromium(finished, tmp_path):
    files = write_report(finished, tmp_path / "out")
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           "--window-size=1100,1400", f"--screenshot={shot}", files.html.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120)
    assert shot.exists() and shot.read_bytes().startswith(PNG_MAGIC)
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"
    shutil.copy(shot, tmp_path.parent / "last_report_screenshot.png")  # kept for a human look

"""Campaign: ask/tell, the stopping rule, resume after a crash, parallel asks, and the campaign CLI."""

from __future__ import annotations

import dataclasses
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from campaign_support import GRID, SPEC, TinyBisection, replay_setup
from fleetsieve.backends.replay import ReplayBackend
from fleetsieve import campaign as campaign_module
from fleetsieve.campaign import Campaign, describe_differences
from fleetsieve.cli import app
from fleetsieve.errors import InputError
from fleetsieve.executors import LocalExecutor, SimulatedClockExecutor
from fleetsieve.grid import measurement_to_row
from fleetsieve.records import Cell, Measurement, Status
from fleetsieve.store import MemoryStore, SQLiteStore

runner = CliRunner()
BACKEND = {"grid": str(GRID)}


def _campaign(store=None, seed=0, **kw) -> Campaign:
    return Campaign.open(store or MemoryStore(), replay_setup(seed), TinyBisection(), **kw)


def _finish(campaign: Campaign, n: int = 1) -> None:
    backend = ReplayBackend(BACKEND)
    while proposals := campaign.ask(n):
        for p in proposals:
            campaign.tell(p, backend.measure(p.cell, seed=p.seed, repeat=p.repeat))


# --- ask / tell -----------------------------------------------------------------------------------

def test_ask_tell_reaches_a_certified_decision_equal_to_run():
    by_hand = _campaign()
    _finish(by_hand)
    looped = _campaign()
    status = looped.run(ReplayBackend(BACKEND))
    assert by_hand.decision().certified and by_hand.done()
    assert status.to_json() == by_hand.status().to_json()
    assert [m.cell for m in looped.measurements()] == [m.cell for m in by_hand.measurements()]


def test_ask_n_gives_distinct_cells_and_passes_them_as_pending():
    campaign = _campaign()
    batch = campaign.ask(4)
    assert len({p.cell for p in batch}) == 4 and len({p.cell.config for p in batch}) == 4
    more = campaign.ask(2)
    assert not {p.cell for p in more} & {p.cell for p in batch}
    assert [p.index for p in batch + more] == list(range(6)) and len(campaign.pending()) == 6


def test_proposal_carries_repeat_and_seed():
    campaign = _campaign(seed=9)
    p = campaign.ask()[0]
    assert p.repeat == 0 and p.seed == 9 and p.id == "p00000"


def test_tell_refuses_twice_unknown_and_the_wrong_cell():
    campaign = _campaign()
    p = campaign.ask()[0]
    m = ReplayBackend(BACKEND).measure(p.cell)
    with pytest.raises(InputError, match="measurement is of"):
        campaign.tell(p, Measurement(Cell("chat", 8, 99.0)))
    campaign.tell(p, m)
    with pytest.raises(InputError, match="already has a measurement"):
        campaign.tell(p, m)
    with pytest.raises(InputError, match="unknown proposal"):
        campaign.tell("p99999", m)
    assert len(campaign.measurements()) == 1


def test_tell_records_the_proposals_repeat():
    campaign = _campaign()
    p = campaign.ask()[0]
    campaign.tell(p, ReplayBackend(BACKEND).measure(p.cell, repeat=5))
    assert campaign.measurements()[0].repeat == p.repeat == 0


def test_ask_needs_a_positive_n():
    with pytest.raises(InputError):
        _campaign().ask(0)


# --- resume ---------------------------------------------------------------------------------------

def test_in_flight_proposals_are_reissued_after_a_crash(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    first = _campaign(SQLiteStore(url))
    lost = first.ask(3)
    first.tell(lost[0], ReplayBackend(BACKEND).measure(lost[0].cell))
    resumed = _campaign(SQLiteStore(url), resume=True)
    again = resumed.ask(3)
    assert again[:2] == lost[1:] and again[2].cell not in {p.cell for p in lost}


def test_shell_workers_do_not_steal_each_others_proposals(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    first = _campaign(SQLiteStore(url)).ask()[0]
    second = Campaign.load(SQLiteStore(url), TinyBisection(), reissue_pending=False).ask()[0]
    assert second.cell != first.cell


def test_resume_refuses_a_changed_setup_and_says_how():
    store = MemoryStore()
    _campaign(store)
    with pytest.raises(InputError, match="already holds a campaign; pass --resume"):
        _campaign(store)
    changed = replay_setup(seed=1)
    with pytest.raises(InputError, match=r"seed: 0 -> 1"):
        Campaign.open(store, changed, TinyBisection(), resume=True)


def test_describe_differences_names_paths():
    old = {"spec": {"gpu_budget": 16, "workloads": {"chat": {"demand_rps": 6.0}}}, "seed": 0}
    new = {"spec": {"gpu_budget": 8, "workloads": {"chat": {"demand_rps": 6.0}, "code": {}}}, "seed": 0}
    assert describe_differences(old, new) == ["spec.gpu_budget: 16 -> 8", "spec.workloads.code added"]


def _db_counts(path) -> tuple[int, int]:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        try:
            return tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("proposals", "results"))
        finally:
            conn.close()
    except sqlite3.Error:
        return (0, 0)  # not created yet, or mid-creation


def _run_cmd(db, cli: bool = False) -> list[str]:
    """The campaign process: the CLI, or the same campaign without the CLI's start-up cost."""
    if cli:
        return [sys.executable, "-m", "fleetsieve.cli", "run", str(SPEC), "--backend", "replay", "--grid", str(GRID),
                "--strategy", "sieve", "--storage", f"sqlite:///{db}", "--resume", "--json", "--no-progress"]
    return [sys.executable, str(Path(__file__).parent / "campaign_support.py"), f"sqlite:///{db}", "0", "sieve"]


def _kill_at(db, target_events: int, rng: random.Random) -> None:
    """Start a campaign process and SIGKILL it once the store holds ``target_events`` rows (or at once)."""
    proc = subprocess.Popen(_run_cmd(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and sum(_db_counts(db)) < target_events:
        time.sleep(0.002)
    time.sleep(rng.uniform(0, 0.004))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _check_store(db, reference: set[tuple[Cell, int]]) -> int:
    """Check nothing was lost or duplicated; return how many measurements the store holds."""
    with SQLiteStore(f"sqlite:///{db}") as store:
        ids = [pid for pid, _ in store.results()]
        done = [(m.cell, m.repeat) for m in store.measurements()]
        assert len(ids) == len(set(ids)) and len(done) == len(set(done)), "a measurement was duplicated"
        assert set(done) <= reference, "a measurement the uninterrupted run never made"
        assert len(store.pending()) <= 1
        return len(done)


@pytest.mark.slow
def test_sigkill_twenty_times_and_resume(tmp_path):
    reference_db = tmp_path / "reference.db"
    reference = json.loads(subprocess.run(_run_cmd(reference_db), capture_output=True, text=True, check=True).stdout)
    with SQLiteStore(f"sqlite:///{reference_db}") as store:
        ref_runs = {(m.cell, m.repeat) for m in store.measurements()}
        events = len(store.proposals()) + len(store.results())
    rng, mid_campaign = random.Random(20), 0
    for campaign in range(4):  # 4 campaigns x 5 kills = 20 kills at random points
        db = tmp_path / f"crash{campaign}.db"
        for _ in range(5):
            _kill_at(db, rng.randint(0, events), rng)
            mid_campaign += 0 < _check_store(db, ref_runs) < len(ref_runs)
        final = json.loads(subprocess.run(_run_cmd(db, cli=campaign == 0), capture_output=True, text=True,
                                          check=True).stdout)
        assert final == reference
        with SQLiteStore(f"sqlite:///{db}") as store:
            assert {(m.cell, m.repeat) for m in store.measurements()} == ref_runs and not store.pending()
    assert mid_campaign >= 5, "too few kills landed in the middle of a campaign to test anything"


# --- parallel -------------------------------------------------------------------------------------

def test_parallel_slots_are_kept_busy_and_reach_the_same_certified_decision():
    serial_clock, clock = SimulatedClockExecutor(), SimulatedClockExecutor()
    serial = _campaign().run(ReplayBackend(BACKEND), serial_clock, parallel=1)
    wide = _campaign().run(ReplayBackend(BACKEND), clock, parallel=4)
    assert wide.decision.certified and serial.decision.certified
    wide_obj, serial_obj = wide.decision.conservative.objective, serial.decision.conservative.objective
    assert abs(wide_obj.min_fulfilment - serial_obj.min_fulfilment) <= 0.01  # the spec's tolerances
    assert abs(wide_obj.served_rps - serial_obj.served_rps) <= 0.05
    assert clock.clock_s < serial_clock.clock_s  # four slots reach the decision sooner
    assert wide.measurements >= serial.measurements


def test_local_executor_matches_the_simulated_clock_with_one_slot():
    a = _campaign().run(ReplayBackend(BACKEND), LocalExecutor(), parallel=1)
    b = _campaign().run(ReplayBackend(BACKEND), SimulatedClockExecutor(), parallel=1)
    assert a.to_json() == b.to_json()


def test_progress_hears_every_measurement():
    class Sink:
        def __init__(self):
            self.seen = []

        def update(self, status):
            self.seen.append(status.measurements)

    sink = Sink()
    status = _campaign().run(ReplayBackend(BACKEND), parallel=2, progress=sink)
    assert sink.seen == list(range(status.measurements + 1))


# --- CLI ------------------------------------------------------------------------------------------

def _run(tmp_path, *extra, spec=SPEC, db="c.db"):
    args = ["run", str(spec), "--backend", "replay", "--grid", str(GRID), "--storage", f"sqlite:///{tmp_path / db}", *extra]
    return runner.invoke(app, args)


def test_cli_run_json_shape_matches_plan(tmp_path):
    result = _run(tmp_path, "--json", "--strategy", "sieve")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    plan = json.loads(runner.invoke(app, ["plan", str(SPEC), "--grid", str(GRID), "--json"]).stdout)
    assert set(out) >= {"allocation", "gpu_seconds", "measurements", "gap"}
    assert set(out["allocation"]) == set(plan) and set(out["gap"]) == {"fulfilment", "served_rps"}
    assert out["allocation"]["min_fulfilment"] == plan["min_fulfilment"] and out["measurements"] > 0


def test_cli_run_table_and_resume_of_a_finished_campaign(tmp_path):
    assert _run(tmp_path, "--strategy", "sieve").exit_code == 0
    again = _run(tmp_path, "--strategy", "sieve", "--resume", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["gap"]["fulfilment"] == 0.0


def _one_line_error(result, needle):
    assert result.exit_code == 2, result.output
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], result.output


def test_cli_missing_and_unwritable_storage(tmp_path):
    _one_line_error(runner.invoke(app, ["run", str(SPEC), "--backend", "replay", "--grid", str(GRID)]), "--storage: missing")
    _one_line_error(_run(tmp_path, db="no/such/dir.db"), "does not exist")


def test_cli_refuses_a_changed_spec_and_keeps_the_data(tmp_path):
    assert _run(tmp_path, "--strategy", "sieve").exit_code == 0
    before = SQLiteStore(f"sqlite:///{tmp_path / 'c.db'}").results()
    changed = tmp_path / "fleet.toml"
    changed.write_text(SPEC.read_text().replace("demand_rps = 6.0", "demand_rps = 7.0"))
    _one_line_error(_run(tmp_path, "--strategy", "sieve", "--resume", spec=changed),
                    "spec.workloads.chat.demand_rps: 6.0 -> 7.0")
    _one_line_error(_run(tmp_path, "--strategy", "sieve"), "pass --resume")
    assert SQLiteStore(f"sqlite:///{tmp_path / 'c.db'}").results() == before


def test_cli_corrupt_database_is_one_line_and_untouched(tmp_path):
    db = tmp_path / "c.db"
    db.write_bytes(b"garbage" * 1000)
    _one_line_error(_run(tmp_path, "--strategy", "sieve"), "not a usable FleetSieve database")
    _one_line_error(runner.invoke(app, ["report", str(db), "--out", str(tmp_path / "r")]), "not a usable")
    assert db.read_bytes() == b"garbage" * 1000


def test_cli_live_backend_needs_spec_levels(tmp_path):
    result = runner.invoke(app, ["run", str(SPEC), "--backend", "openai", "--backend-arg", "model=m",
                                 "--storage", f"sqlite:///{tmp_path / 'c.db'}"])
    _one_line_error(result, "no load levels for TP 1")
    assert not (tmp_path / "c.db").exists()


def test_cli_unknown_strategy_and_executor(tmp_path):
    _one_line_error(_run(tmp_path, "--strategy", "nope"), "unknown strategy 'nope'")
    _one_line_error(_run(tmp_path, "--executor", "nope"), "unknown executor 'nope'")


def _ask_and_tell_until_done(url: str) -> tuple[dict, int]:
    """Drive the stored campaign through the CLI with replayed measurements: (last status, tells)."""
    backend, told, status = ReplayBackend(BACKEND), 0, {}
    while (asked := runner.invoke(app, ["ask", "--storage", url])).stdout.strip():
        proposal = json.loads(asked.stdout)
        m = backend.measure(Cell.from_dict(proposal), seed=proposal["seed"], repeat=proposal["repeat"])
        row = {k: v for k, v in measurement_to_row(m).items() if k not in ("source",)}
        result = runner.invoke(app, ["tell", "--storage", url, proposal["id"], json.dumps(row)])
        assert result.exit_code == 0, result.output
        told, status = told + 1, json.loads(result.stdout)
    return status, told


def test_cli_ask_and_tell_drive_a_campaign_like_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'shell.db'}"
    with SQLiteStore(url) as store:
        Campaign.open(store, replay_setup(strategy="sieve"))
    status, told = _ask_and_tell_until_done(url)
    reference = json.loads(_run(tmp_path, "--json", "--strategy", "sieve", db="run.db").stdout)
    assert status["allocation"] == reference["allocation"] and told == reference["measurements"]


def test_cli_tell_with_fields_and_its_errors(tmp_path):
    url = f"sqlite:///{tmp_path / 'shell.db'}"
    with SQLiteStore(url) as store:
        Campaign.open(store, replay_setup(strategy="sieve"))
    p = json.loads(runner.invoke(app, ["ask", "--storage", url]).stdout)
    _one_line_error(runner.invoke(app, ["tell", "--storage", url, p["id"], "--field", "request_throughput=1"]),
                    "needs p99_e2el_ms")
    _one_line_error(runner.invoke(app, ["tell", "--storage", url, p["id"], "{not json"]), "not valid JSON")
    _one_line_error(runner.invoke(app, ["tell", "--storage", url, "p77777", "{}"]), "unknown proposal")
    fields = ["--field", "request_throughput=9", "--field", "p99_e2el_ms=100", "--field", "p99_ttft_ms=10",
              "--field", "gpu_seconds=300"]
    ok = runner.invoke(app, ["tell", "--storage", url, p["id"], *fields])
    assert ok.exit_code == 0, ok.output
    _one_line_error(runner.invoke(app, ["tell", "--storage", url, p["id"], *fields]), "already has a measurement")
    _one_line_error(runner.invoke(app, ["ask", "--storage", f"sqlite:///{tmp_path / 'none.db'}"]), "no such campaign")


def test_a_cell_that_keeps_failing_is_given_up_so_the_campaign_ends():
    class Broken(ReplayBackend):
        def measure(self, cell, *, seed=0, repeat=0, slo=None):
            return Measurement(cell, Status.FAILED, repeat=repeat, reason="engine crashed")

    class Stubborn(TinyBisection):  # re-proposes failed cells, as a strategy may to buy a repeat
        def propose(self, state, n=1):
            cells = [c for c in state.knowledge.space.cells() if c not in state.pending]
            return cells[:n]

    campaign = Campaign.open(MemoryStore(), replay_setup(), Stubborn(), max_failures_per_cell=2)
    status = campaign.run(Broken(BACKEND))
    assert not status.decision.certified
    assert status.measurements == 2 * len(campaign.space.cells()) == 2 * len(campaign.given_up())


def test_cli_create_starts_a_campaign_that_ask_and_tell_finish_like_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'created.db'}"
    created = runner.invoke(app, ["create", str(SPEC), "--backend", "replay", "--grid", str(GRID), "--storage", url])
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["measurements"] == 0
    _ask_and_tell_until_done(url)
    ran = runner.invoke(app, ["run", str(SPEC), "--backend", "replay", "--grid", str(GRID), "--json", "--no-progress",
                              "--storage", f"sqlite:///{tmp_path / 'ran.db'}"])
    final = runner.invoke(app, ["tell", "--storage", url, "--field", "x=1", "nope"])
    assert final.exit_code != 0
    with SQLiteStore(url) as store:
        assert Campaign.load(store).status().to_json() == json.loads(ran.stdout.strip().splitlines()[-1])
    again = runner.invoke(app, ["create", str(SPEC), "--backend", "replay", "--grid", str(GRID), "--storage", url])
    assert again.exit_code != 0 and "already holds a campaign" in again.output


def test_setup_keeps_its_verdict_rule_and_old_setups_read_as_plain():
    from fleetsieve.store import CampaignSetup
    setup = dataclasses.replace(replay_setup(), verdicts="noise-aware")
    assert CampaignSetup.from_dict(setup.to_dict()).verdicts == "noise-aware"
    old = {k: v for k, v in setup.to_dict().items() if k != "verdicts"}
    assert CampaignSetup.from_dict(old).verdicts == "plain"


def test_cli_noise_aware_campaign_judges_with_confidence_and_refuses_a_plain_resume(tmp_path):
    result = _run(tmp_path, "--json", "--noise-aware", "--no-progress")
    assert result.exit_code == 0, result.output
    with SQLiteStore(f"sqlite:///{tmp_path / 'c.db'}") as store:
        campaign = Campaign.load(store)
        assert campaign.setup.verdicts == "noise-aware"
        assert campaign.knowledge().verdict_rule is not campaign_module.all_repeats_rule
    _one_line_error(_run(tmp_path, "--resume", "--no-progress"), "verdicts")

"""``simulate`` and ``grid build`` through Typer, including one-line input errors."""

import json

import typer
from typer.testing import CliRunner

from fleetsieve.grid import load_grid
from fleetsieve.records import Status
from fleetsieve.sim.cli import register


def app():
    a = typer.Typer()

    @a.callback()
    def _root() -> None:
        """test root"""

    register(a)
    return a


def invoke(*args):
    return CliRunner().invoke(app(), list(args))


def test_simulate_closed_loop_json():
    res = invoke("simulate", "--tp", "4", "--concurrency", "4", "--isl", "256", "--osl", "16", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["gpu_seconds"] == 4 * data["duration_s"] and data["p99_tpot_ms"] > 0


def test_simulate_kv_precision_defaults_to_weights_and_can_differ():
    base = ["simulate", "--model", "meta-llama/Llama-3.1-70B", "--tp", "2", "--precision", "fp8",
            "--concurrency", "8", "--isl", "2048", "--osl", "64", "--json"]
    same = json.loads(invoke(*base).output)
    wide = json.loads(invoke(*base, "--kv-precision", "bf16").output)
    assert same["kv_precision"] == "fp8" and wide["kv_precision"] == "bf16"
    assert wide["mean_tpot_ms"] > same["mean_tpot_ms"]  # twice the KV bytes read per decode step


def test_simulate_open_loop_json():
    res = invoke("simulate", "--tp", "8", "--workload", "code", "--rate", "1", "--duration", "30", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["duration_s"] == 30 and "num_preemptions" in data and data["request_throughput"] > 0


def test_open_loop_with_no_measured_request_warns_on_stderr():
    # Azure code's timestamps have an inter-arrival CV of 13: this 60 s window is empty after warm-up
    res = invoke("simulate", "--tp", "2", "--workload", "code", "--arrival", "trace", "--rate", "2",
                 "--duration", "60", "--json")
    assert res.exit_code == 0
    assert "warning: no request arrived after the warm-up" in res.stderr
    assert json.loads(res.stdout)["num_requests"] == 0


def test_catalog_help_shows_its_table_names():
    assert "[models.X] / [hardware.X]" in " ".join(invoke("simulate", "--help").output.split())


def test_one_line_errors():
    for args, text in [(["--model", "x/y", "--concurrency", "2"], "unknown model"),
                       (["--gpu", "tpu", "--concurrency", "2"], "unknown gpu"),
                       (["--workload", "chat", "--rate", "-2"], "--rate"),
                       (["--tp", "2"], "either --concurrency"),
                       (["--kv-precision", "int4", "--concurrency", "2"], "--kv-precision")]:
        res = invoke("simulate", *args)
        assert res.exit_code == 2 and text in res.output and res.output.count("\n") == 1, res.output


def test_grid_build_marks_non_fitting_tp_infeasible(tmp_path):
    spec = tmp_path / "fleet.toml"
    spec.write_text('gpu_budget = 8\ntp_degrees = [1, 2]\n[workloads.code]\ndemand_rps = 1\n'
                    'slo = {p99_e2el_ms = 30000}\nload_rps = [0.5]\n')
    out = tmp_path / "grid.csv"
    res = invoke("grid", "build", str(spec), "--model", "meta-llama/Llama-3.1-70B", "--out", str(out),
                 "--duration", "20", "--repeats", "2", "--workers", "1")
    assert res.exit_code == 0, res.output
    grid = load_grid(out)
    tp1 = [m for m in grid.measurements if m.cell.tp == 1]
    assert len(tp1) == 2 and all(m.status is Status.ABORTED_INFEASIBLE and m.reason == "model does not fit"
                                 and m.gpu_seconds == 0 for m in tp1)
    tp2 = [m for m in grid.measurements if m.cell.tp == 2]
    assert all(m.status is Status.OK and m.gpu_seconds == 40 for m in tp2)


def test_grid_build_in_parallel_workers(tmp_path):
    spec = tmp_path / "fleet.toml"
    spec.write_text('gpu_budget = 8\ntp_degrees = [4, 8]\n[workloads.chat]\ndemand_rps = 1\n'
                    'slo = {p99_e2el_ms = 30000}\nload_rps = {"4" = [1.0, 2.0], "8" = [2.0]}\n')
    out = tmp_path / "grid.csv"
    res = invoke("grid", "build", str(spec), "--out", str(out), "--duration", "15", "--repeats", "1", "--workers", "2")
    assert res.exit_code == 0, res.output
    grid = load_grid(out)
    assert sorted((c.tp, c.load_rps) for c in grid.cells()) == [(4, 1.0), (4, 2.0), (8, 2.0)]

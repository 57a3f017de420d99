import json

import pytest
import typer
from evaluate_grids import make_spec, monotone_grid
from typer.testing import CliRunner

from fleetsieve.evaluate.cli import register
from fleetsieve.grid import write_grid

REQUIRED = {"strategies", "savings_vs_random", "per_workload", "hindsight_certificate_gpu_s", "exhaustive_gpu_s", "oracle"}


@pytest.fixture
def app():
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """test app"""

    register(app)
    return app


@pytest.fixture
def files(tmp_path):
    caps = {("a", 1): 2, ("a", 2): 3, ("b", 1): 1, ("b", 2): 4}
    spec = make_spec({"a": 3.0, "b": 2.0}, [1, 2], 6)
    grid_path, spec_path = tmp_path / "grid.csv", tmp_path / "fleet.toml"
    write_grid(monotone_grid(caps, 4).measurements, grid_path)
    lines = [f"gpu_budget = {spec.gpu_budget}", "tp_degrees = [1, 2]"]
    for w, wl in spec.workloads.items():
        lines += [f"[workloads.{w}]", f"demand_rps = {wl.demand_rps}", "slo = { p99_e2el_ms = 30000 }"]
    spec_path.write_text("\n".join(lines) + "\n")
    return spec_path, grid_path


def _invoke(app, files, *extra):
    spec_path, grid_path = files
    args = ["compare", str(spec_path), "--grid", str(grid_path), "--orders", "4", "--workers", "1", "--quiet",
            "-s", "random", "-s", "exhaustive", *extra]
    return CliRunner().invoke(app, args)


def test_compare_writes_json_with_the_issue_keys_and_plots(app, files, tmp_path):
    out, plots = tmp_path / "out.json", tmp_path / "plots"
    result = _invoke(app, files, "--json", str(out), "--plots", str(plots))
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert REQUIRED <= set(doc)
    row = doc["strategies"]["exhaustive"]
    assert set(row) >= {"cost_to_oracle_gpu_s", "cost_to_certificate_gpu_s", "final_is_oracle_rate", "slo_violations"}
    assert len(row["cost_to_oracle_gpu_s"]["values"]) == 4
    assert set(doc["savings_vs_random"]["exhaustive"]) == {"mean", "ci95", "fixed_order"}
    assert set(doc["per_workload"]) == {"a", "b"} and "exhaustive" in doc["per_workload"]["a"]["savings_vs_random"]
    assert doc["savings_vs_random"]["random"]["mean"] == 0.0
    assert sorted(p.name for p in plots.iterdir()) == ["cost_distribution.png", "gap_vs_gpu_s.png", "savings_ci.png"]
    assert "Strategies over 4 reveal orders" in result.output


def test_same_seed_same_json(app, files, tmp_path):
    docs = []
    for k in range(2):
        out = tmp_path / f"o{k}.json"
        assert _invoke(app, files, "--json", str(out), "--seed", "9").exit_code == 0
        doc = json.loads(out.read_text())
        doc["hindsight_certificate"].pop("search_seconds")
        for w in doc["per_workload"].values():
            w.pop("hindsight_search_seconds", None)
        docs.append(doc)
    assert docs[0] == docs[1]


def test_bad_input_is_one_line_and_exit_2(app, files):
    result = _invoke(app, files, "--orders", "0")
    assert result.exit_code == 2 and "--orders" in result.output
    result = _invoke(app, files, "-s", "no-such-strategy")
    assert result.exit_code == 2 and "unknown strategy" in result.output

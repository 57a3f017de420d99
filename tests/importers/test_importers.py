import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsieve.errors import InputError
from fleetsieve.grid import load_grid
from fleetsieve.importers import import_files, parse_files
from fleetsieve.metrics import GRID_METRIC_COLUMNS
from fleetsieve.records import Cell, Status

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def test_vllm_summary_keys_map_one_to_one():
    [m] = parse_files([FIX / "vllm_qwen32b_rate2.json"], "vllm", workload="chat", tp=2)
    raw = json.loads((FIX / "vllm_qwen32b_rate2.json").read_text())
    assert m.cell == Cell("chat", 2, 2.0) and m.status is Status.OK
    assert all(m.metrics[k] == pytest.approx(raw[k]) for k in GRID_METRIC_COLUMNS)
    assert m.gpu_seconds == pytest.approx(2 * raw["duration"]) and m.completed == 200


def test_vllm_missing_statistics_come_from_detailed_arrays():
    [m] = parse_files([FIX / "vllm_detailed_rate1.json"], "vllm", workload="chat", tp=1)
    # successful requests 0, 1, 2, 4 (request 3 errored): e2el = ttft + sum(itls)
    e2el = [0.1 + 0.075, 0.11 + 0.06, 0.12 + 0.03, 0.15 + 0.025]
    assert m.metric("mean_e2el_ms") == pytest.approx(1e3 * sum(e2el) / 4)
    assert m.metric("p50_ttft_ms") == pytest.approx(110.0)  # from median_ttft_ms
    assert m.metric("p99_ttft_ms") == pytest.approx(150.0)  # summary key wins over arrays
    tpot = [0.075 / 3, 0.06 / 3, 0.03, 0.025]
    assert m.metric("p90_tpot_ms") == pytest.approx(1e3 * float(__import__("numpy").percentile(tpot, 90)))
    assert (m.num_requests, m.completed) == (5, 4)


def test_guidellm_gives_one_row_per_benchmark():
    rows = parse_files([FIX / "guidellm_benchmarks.json"], "guidellm", workload="chat", tp=4)
    assert [m.cell.load_rps for m in rows] == [2.0, 4.0]
    first = rows[0]
    assert first.metric("p99_e2el_ms") == pytest.approx(8000.0)  # request_latency is in seconds
    assert first.metric("p50_ttft_ms") == pytest.approx(142.5)
    assert first.metric("mean_tpot_ms") == first.metric("mean_itl_ms") == pytest.approx(30.0)
    assert first.gpu_seconds == pytest.approx(240.0) and (first.num_requests, first.completed) == (120, 118)


def test_aiperf_maps_avg_and_percentiles():
    [m] = parse_files([FIX / "aiperf_profile_export_aiperf.json"], "aiperf", workload="code", tp=8)
    assert m.cell == Cell("code", 8, 3.0)
    assert m.metric("mean_ttft_ms") == pytest.approx(160.0) and m.metric("p99_e2el_ms") == pytest.approx(8200.0)
    assert m.metric("request_throughput") == pytest.approx(2.95) and m.gpu_seconds == pytest.approx(8 * 61.0)


@pytest.mark.parametrize("name, fmt, words", [
    ("bad_vllm_missing_p90.json", "vllm", ["bad_vllm_missing_p90.json", "'p90_ttft_ms'"]),
    ("bad_vllm_inf_rate.json", "vllm", ["bad_vllm_inf_rate.json", "'request_rate'", "inf"]),
    ("bad_vllm_inconsistent_rate.json", "vllm", ["inconsistent rate", "'request_rate'"]),
    ("bad_guidellm_synchronous.json", "guidellm", ["'benchmarks[0].args.strategy.type_'", "synchronous"]),
    ("vllm_qwen32b_rate2.json", "guidellm", ["missing key 'benchmarks'"]),
    ("guidellm_benchmarks.json", "aiperf", ["missing key 'input_config'"]),
])
def test_bad_input_names_file_and_key(name, fmt, words):
    with pytest.raises(InputError) as err:
        parse_files([FIX / name], fmt, workload="chat", tp=1)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_unknown_format_and_bad_file():
    with pytest.raises(InputError, match="unknown format 'csv'.*aiperf, guidellm, vllm"):
        parse_files([FIX / "vllm_qwen32b_rate2.json"], "csv", workload="chat", tp=1)
    with pytest.raises(InputError, match="README.md: not valid JSON"):
        parse_files([FIX / "README.md"], "vllm", workload="chat", tp=1)


def test_one_bad_file_writes_nothing(tmp_path):
    out = tmp_path / "grid.csv"
    with pytest.raises(InputError):
        import_files([FIX / "vllm_qwen32b_rate2.json", FIX / "bad_vllm_inf_rate.json"], "vllm",
                     workload="chat", tp=2, out=out)
    assert not out.exists()


def test_append_numbers_repeats_and_round_trips(tmp_path):
    out = tmp_path / "grid.csv"
    import_files([FIX / "vllm_qwen32b_rate2.json"], "vllm", workload="chat", tp=2, out=out)
    import_files([FIX / "vllm_qwen32b_rate2.json", FIX / "vllm_qwen32b_rate4.json"], "vllm",
                 workload="chat", tp=2, out=out)
    grid = load_grid(out)
    assert [m.repeat for m in grid.runs(Cell("chat", 2, 2.0))] == [0, 1]
    assert len(grid.runs(Cell("chat", 2, 4.0))) == 1
    assert not any(math.isnan(grid.runs(Cell("chat", 2, 4.0))[0].metric(k)) for k in GRID_METRIC_COLUMNS)


def test_imported_grid_goes_through_plan(tmp_path):
    from fleetsieve.cli import app

    out = tmp_path / "grid.csv"
    import_files([FIX / "guidellm_benchmarks.json"], "guidellm", workload="chat", tp=4, out=out)
    import_files([FIX / "vllm_qwen32b_rate2.json", FIX / "vllm_qwen32b_rate4.json"], "vllm", workload="chat", tp=2, out=out)
    spec = tmp_path / "spec.toml"
    spec.write_text('gpu_budget = 8\ntp_degrees = [2, 4]\n[workloads.chat]\ndemand_rps = 6\n'
                    'slo = { p99_e2el_ms = 9000 }\n')
    result = CliRunner().invoke(app, ["plan", str(spec), "--grid", str(out), "--json"])
    assert result.exit_code == 0, result.output
    decision = json.loads(result.output)
    assert decision["gpus_used"] <= 8 and decision["served_rps"] > 0

import json

import typer
from typer.testing import CliRunner

from fleetsieve.backends.openai.cli import register
from fleetsieve.metrics import GRID_METRIC_COLUMNS


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def root() -> None:
        pass

    return app


def test_measure_prints_one_json_object(sim_server):
    result = CliRunner().invoke(cli(), ["measure", "--endpoint", sim_server.url, "--model", "m", "--workload", "chat",
                                        "--rate", "20", "--duration", "1", "--warmup", "0.1", "--cooldown", "0.1",
                                        "--tp", "2", "--json"])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.output)
    assert obj["status"] == "OK" and obj["tp"] == 2 and obj["gpu_seconds"] >= 2.0
    assert all(obj[k] is not None for k in GRID_METRIC_COLUMNS) and "output_throughput" in obj


def test_measure_reports_failure_as_status(closed_port):
    result = CliRunner().invoke(cli(), ["measure", "--endpoint", f"http://127.0.0.1:{closed_port}", "--model", "m",
                                        "--rate", "5", "--duration", "0.5", "--json"])
    assert result.exit_code == 0
    obj = json.loads(result.output)
    assert obj["status"] == "FAILED" and "connection refused" in obj["reason"]


def test_bad_workload_is_input_error():
    result = CliRunner().invoke(cli(), ["measure", "--endpoint", "http://127.0.0.1:1", "--model", "m",
                                        "--workload", "nope", "--rate", "5"])
    assert result.exit_code == 2 and "unknown workload" in result.output

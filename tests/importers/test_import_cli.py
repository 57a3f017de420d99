from pathlib import Path

import typer
from typer.testing import CliRunner

from fleetsieve.grid import load_grid
from fleetsieve.importers.cli import register

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def root() -> None:  # keeps "import" a subcommand
        pass

    return app


def test_import_command_appends_rows(tmp_path):
    out = tmp_path / "g.csv"
    result = CliRunner().invoke(cli(), ["import", str(FIX / "aiperf_profile_export_aiperf.json"), "--format", "aiperf",
                                        "--workload", "code", "--tp", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "imported 1 run(s)" in result.output and len(load_grid(out).measurements) == 1


def test_import_command_reports_bad_input_in_one_line_with_exit_2(tmp_path):
    out = tmp_path / "g.csv"
    result = CliRunner().invoke(cli(), ["import", str(FIX / "bad_vllm_missing_p90.json"), "--format", "vllm",
                                        "--workload", "chat", "--tp", "1", "--out", str(out)])
    assert result.exit_code == 2 and "bad_vllm_missing_p90.json" in result.output and "p90_ttft_ms" in result.output
    assert not out.exists()
    unknown = CliRunner().invoke(cli(), ["import", str(FIX / "vllm_qwen32b_rate2.json"), "--format", "nope",
                                         "--workload", "chat", "--tp", "1", "--out", str(out)])
    assert unknown.exit_code == 2 and "unknown format" in unknown.output

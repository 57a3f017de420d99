"""serve-sim's command line: workers sharing a port, input errors, and a cheap import."""

import json
import signal
import subprocess
import sys
import urllib.request

import typer
from typer.testing import CliRunner

from fleetsieve.serve_sim.cli import register


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def root() -> None:
        pass

    return app


def test_workers_need_the_fixed_engine_and_bad_input_is_an_input_error():
    from fleetsieve.errors import InputError

    for args, where in ((["--workers", "2"], "--workers"), (["--engine", "x"], "--engine"),
                        (["--engine", "fixed", "--workers", "0"], "--workers")):
        result = CliRunner().invoke(cli(), ["serve-sim", "--model", "m", *args])
        assert isinstance(result.exception, InputError) and result.exception.where == where


def test_cli_modules_import_without_aiohttp_or_scipy_stats():
    code = ("import sys, fleetsieve.serve_sim.cli, fleetsieve.backends.openai.cli, fleetsieve.importers.cli; "
            "print([m for m in ('aiohttp', 'scipy.stats', 'httpx') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_two_workers_share_one_port_and_stop_on_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "fleetsieve.serve_sim", "--model", "m", "--engine", "fixed",
                             "--time-scale", "0", "--workers", "2", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serve-sim listening on http://127.0.0.1:"), proc.stderr.read()
        url = line.split()[-1]
        body = json.dumps({"model": "m", "prompt": [1, 2], "max_tokens": 3, "stream": True}).encode()
        for _ in range(4):  # each request on a new connection: the kernel may pick either worker
            req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.read().count(b'"text":" t"') == 3
        workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(workers) >= 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert all(subprocess.run(["kill", "-0", w], capture_output=True).returncode != 0 for w in workers)
    finally:
        proc.kill()
        proc.wait()

import os
import sys
from pathlib import Path

import httpx

from fleetsieve.backends.openai.launcher import EngineLauncher, LaunchArgs, engine_command

STAND_IN = [sys.executable, "-m", "fleetsieve.serve_sim", "--model", "{model}", "--engine", "fixed",
            "--host", "{host}", "--port", "{port}", "--tp", "{tp}"]


def launcher(tmp_path, port, **kw):
    args = LaunchArgs(engine="command", command=STAND_IN, port=port, log_dir=str(tmp_path), startup_timeout_s=20, **kw)
    return EngineLauncher(args, model="m")


def test_vllm_and_sglang_commands():
    assert engine_command(LaunchArgs(port=9000), "org/M", 4) == [
        "vllm", "serve", "org/M", "--tensor-parallel-size", "4", "--host", "127.0.0.1", "--port", "9000"]
    sg = engine_command(LaunchArgs(engine="sglang", extra_args=["--mem-fraction-static", "0.8"]), "M", 2)
    assert sg[1:4] == ["-m", "sglang.launch_server", "--model-path"] and "--tp" in sg and sg[-1] == "0.8"


def test_start_reuse_restart_and_clean_teardown(tmp_path, closed_port):
    engine = launcher(tmp_path, closed_port)
    try:
        first = engine.ensure(1)
        assert first.started and first.error is None and first.startup_s > 0
        assert first.gpu_seconds == first.startup_s
        pid = engine.process.pid
        assert httpx.get(engine.url + "/health").status_code == 200
        again = engine.ensure(1)  # same configuration: reuse, no start-up cost
        assert not again.started and engine.process.pid == pid and again.gpu_seconds == 0
        bigger = engine.ensure(2)  # new TP: restart
        assert bigger.started and engine.process.pid != pid
        assert engine.startup_gpu_seconds == first.gpu_seconds + bigger.gpu_seconds
        proc = engine.process
    finally:
        engine.stop()
    assert proc.poll() is not None and not engine.running
    _assert_group_gone(proc.pid)
    assert "listening" in Path(bigger.log_path).read_text()


def _assert_group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return
    raise AssertionError(f"process group {pgid} still alive")


def test_engine_that_dies_on_start_is_reported_not_raised(tmp_path, closed_port):
    args = LaunchArgs(engine="command", command=[sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"],
                      port=closed_port, log_dir=str(tmp_path))
    engine = EngineLauncher(args, model="m")
    report = engine.ensure(1)
    assert report.error == "engine exited with code 3 before it became healthy"
    assert "boom" in Path(report.log_path).read_text() and not engine.running


def test_missing_executable_is_reported(tmp_path, closed_port):
    args = LaunchArgs(engine="command", command=["/nonexistent/engine"], port=closed_port, log_dir=str(tmp_path))
    report = EngineLauncher(args, model="m").ensure(1)
    assert report.error.startswith("cannot start")


def test_startup_timeout(tmp_path, closed_port):
    args = LaunchArgs(engine="command", command=[sys.executable, "-c", "import time; time.sleep(30)"],
                      port=closed_port, log_dir=str(tmp_path), startup_timeout_s=0.5, stop_grace_s=2)
    engine = EngineLauncher(args, model="m")
    report = engine.ensure(1)
    assert "not healthy after 0.5 s" in report.error and not engine.running

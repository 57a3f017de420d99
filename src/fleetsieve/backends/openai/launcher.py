"""Engine launcher: start ``vllm serve`` / SGLang (or any command) for one TP degree.

The engine runs in its own process group (``start_new_session``), its output goes to a log
file, and the launcher waits for ``GET /health`` to answer 200. Teardown signals only that
process group: SIGTERM, then SIGKILL after a grace period. A running engine is reused while
the TP degree stays the same, so the load levels of one configuration share one start-up.
Start-up costs GPU-seconds too (``tp x seconds until healthy``); they are reported apart from
measurement GPU-seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LaunchArgs(BaseModel):
    """How to start the engine. ``command`` is a template with ``{model} {tp} {port} {host}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["vllm", "sglang", "command"] = "vllm"
    model: str | None = Field(default=None, description="model to load; default: the backend's model")
    command: list[str] | None = Field(default=None, description="argv template for engine='command'")
    extra_args: list[str] = Field(default_factory=list, description="appended to the engine's argv")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    startup_timeout_s: float = Field(default=1800.0, gt=0)
    stop_grace_s: float = Field(default=30.0, gt=0)
    log_dir: str = "fleetsieve-engine-logs"
    health_path: str = "/health"


def engine_command(args: LaunchArgs, model: str, tp: int) -> list[str]:
    """The argv that starts the engine for ``tp`` GPUs."""
    fill = {"model": model, "tp": tp, "port": args.port, "host": args.host}
    if args.engine == "vllm":
        base = ["vllm", "serve", model, "--tensor-parallel-size", str(tp), "--host", args.host, "--port", str(args.port)]
    elif args.engine == "sglang":
        base = [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--tp", str(tp),
                "--host", args.host, "--port", str(args.port)]
    else:
        base = [part.format(**fill) for part in (args.command or [])]
    return base + [part.format(**fill) for part in args.extra_args]


@dataclass(frozen=True)
class LaunchReport:
    """What ``ensure`` did: whether it started an engine, how long that took, at what GPU cost."""

    tp: int
    started: bool
    startup_s: float = 0.0
    log_path: str | None = None
    error: str | None = None

    @property
    def gpu_seconds(self) -> float:
        return self.tp * self.startup_s


class EngineLauncher:
    """Starts, reuses and stops one engine process group."""

    def __init__(self, args: LaunchArgs, model: str) -> None:
        self.args, self.model = args, args.model or model
        self.process: subprocess.Popen | None = None
        self.tp: int | None = None
        self.startup_gpu_seconds = 0.0
        self._log = None

    @property
    def url(self) -> str:
        return f"http://{self.args.host}:{self.args.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure(self, tp: int) -> LaunchReport:
        """Make sure an engine for ``tp`` is up; reuse the running one when it matches."""
        if self.running and self.tp == tp:
            return LaunchReport(tp, started=False)
        self.stop()
        report = self._start(tp)
        self.startup_gpu_seconds += report.gpu_seconds
        return report

    def _start(self, tp: int) -> LaunchReport:
        log_dir = Path(self.args.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"engine-tp{tp}-{int(time.time())}.log"
        self._log = open(log_path, "ab")
        argv = engine_command(self.args, self.model, tp)
        t0 = time.monotonic()
        try:
            self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as err:
            return LaunchReport(tp, True, time.monotonic() - t0, str(log_path), f"cannot start {argv[0]!r}: {err}")
        self.tp = tp
        error = self._wait_healthy()
        if error:
            self.stop()
        return LaunchReport(tp, True, time.monotonic() - t0, str(log_path), error)

    def _wait_healthy(self) -> str | None:
        import httpx  # here, not at module import: keeps CLI start-up fast

        deadline = time.monotonic() + self.args.startup_timeout_s
        url = self.url + self.args.health_path
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                return f"engine exited with code {code} before it became healthy"
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return None
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        return f"engine not healthy after {self.args.startup_timeout_s:g} s"

    def stop(self) -> None:
        """Terminate the engine's process group (only ours), escalating to SIGKILL."""
        proc, self.process, self.tp = self.process, None, None
        if proc is not None:
            # Signal the group even if the leader died: engine workers may outlive it.
            self._signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(self.args.stop_grace_s)
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)  # pgid == pid: the child leads its own session
        except ProcessLookupError:
            pass

"""Every fault gives a FAILED measurement with its reason, bounded retries, and no crash."""

import subprocess
import sys
import threading
import time

import pytest

from fleetsieve.backends.openai.backend import OpenAIBackend
from fleetsieve.records import Cell, Status

CELL = Cell("synthetic", 2, 20.0)


def backend(endpoint, **kw):
    args = dict(endpoint=endpoint, model="m", duration_s=0.5, warmup_s=0, cooldown_s=0, fixed_lengths=(10, 4),
                request_timeout_s=2.0, max_retries=1, retry_backoff_s=0.0, max_failed_requests=3)
    return OpenAIBackend({**args, **kw})


def test_connection_refused(closed_port):
    t0 = time.monotonic()
    m = backend(f"http://127.0.0.1:{closed_port}").measure(CELL)
    assert m.status is Status.FAILED and "connection refused" in m.reason
    assert m.extra["attempts"] == 2  # one retry, then give up
    assert time.monotonic() - t0 < 3.0
    assert m.gpu_seconds > 0  # even a failed attempt costs GPU time


def test_http_5xx_is_retried_and_4xx_is_not(fault_server):
    m500 = backend(fault_server.url + "/status/503").measure(CELL)
    assert m500.status is Status.FAILED and "HTTP 503" in m500.reason and m500.extra["attempts"] == 2
    m400 = backend(fault_server.url + "/status/400").measure(CELL)
    assert m400.status is Status.FAILED and "HTTP 400" in m400.reason and m400.extra["attempts"] == 1


def test_stream_cut_mid_response(fault_server):
    m = backend(fault_server.url + "/cut").measure(CELL)
    assert m.status is Status.FAILED and "stream cut" in m.reason


def test_stream_ending_without_done(fault_server):
    m = backend(fault_server.url + "/nodone", max_retries=0).measure(CELL)
    assert m.status is Status.FAILED and "before [DONE]" in m.reason


def test_timeout(fault_server):
    t0 = time.monotonic()
    m = backend(fault_server.url + "/hang", request_timeout_s=0.3, max_retries=0).measure(CELL)
    assert m.status is Status.FAILED and "timeout" in m.reason
    assert time.monotonic() - t0 < 3.0


def test_server_killed_mid_run(closed_port):
    port = closed_port
    proc = subprocess.Popen([sys.executable, "-m", "fleetsieve.serve_sim", "--model", "m", "--engine", "fixed",
                             "--step-ms", "5", "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert "listening" in proc.stdout.readline()
        threading.Timer(0.8, proc.kill).start()
        m = backend(f"http://127.0.0.1:{port}", duration_s=3.0, max_retries=1).measure(Cell("synthetic", 1, 30.0))
    finally:
        proc.kill()
        proc.wait()
    assert m.status is Status.FAILED
    assert any(word in m.reason for word in ("stream cut", "connection refused", "requests failed"))
    assert m.extra["attempts"] == 2


@pytest.mark.parametrize("path", ["/status/500", "/cut"])
def test_measure_never_raises_on_faults(fault_server, path):
    m = backend(fault_server.url + path, max_retries=0).measure(CELL, seed=3, repeat=2)
    assert m.repeat == 2 and m.status is Status.FAILED

"""Load-generator throughput and client-side timing overhead against serve-sim on loopback.

serve-sim runs in its own process (fixed 1 ms step engine, real-time pacing) on 127.0.0.1;
the load generator sends open-loop Poisson arrivals at the offered rate, 16-token prompts and
8-token streamed outputs. Reported:

* sustained streamed req/s = requests completed / wall seconds from first send to last token;
* client timing overhead per token = wall time the client spends in SSE parsing + stamping per
  received token (each ``StreamParser.feed`` call timed, divided by the tokens it delivered),
  p50/p99 over all calls. Targets (issue 5): >= 1000 req/s and p99 <= 1 ms on 2 cores.

Run: ``python benchmarks/bench_loadgen.py [--rate 1200] [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time

import numpy as np

from fleetsieve.backends.openai import protocol
from fleetsieve.backends.openai.loadgen import ClientOptions, RequestPlan, run_load


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_feed(costs: list[float]):
    original = protocol.StreamParser.feed

    def feed(self, data: bytes) -> int:
        t0 = time.perf_counter()
        new = original(self, data)
        if new:
            costs.append((time.perf_counter() - t0) / new)
        return new

    return original, feed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=1200.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--output-tokens", type=int, default=8)
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "fleetsieve.serve_sim", "--model", "m", "--engine", "fixed",
                               "--step-ms", "1", "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()
        rng = np.random.default_rng(0)
        arrivals = np.cumsum(rng.exponential(1 / a.rate, int(a.rate * a.seconds)))
        n = len(arrivals)
        plan = RequestPlan(arrivals, np.full(n, 16), np.full(n, a.output_tokens), float(arrivals[-1]))
        costs: list[float] = []
        original, patched = timed_feed(costs)
        protocol.StreamParser.feed = patched
        out = run_load(plan, ClientOptions(f"http://127.0.0.1:{port}", "m", request_timeout_s=30))
        protocol.StreamParser.feed = original
    finally:
        server.terminate()
        server.wait(10)
    ok = [r for r in out.records if r.ok]
    last = max(r.end_s for r in ok)
    late = np.array([r.start_s - r.scheduled_s for r in out.records]) * 1e3
    per_token_ms = np.array(costs) * 1e3
    print(f"requests sent {len(out.records)}, completed {len(ok)}, errors {len(out.records) - len(ok)}")
    print(f"offered {a.rate:.0f} req/s; sustained streamed {len(ok) / last:.0f} req/s "
          f"(ratio to 1000 req/s target: {len(ok) / last / 1000:.2f})")
    print(f"send lateness vs schedule: p50 {np.percentile(late, 50):.2f} ms, p99 {np.percentile(late, 99):.2f} ms")
    print(f"client timing overhead per token: p50 {np.percentile(per_token_ms, 50) * 1e3:.1f} us, "
          f"p99 {np.percentile(per_token_ms, 99) * 1e3:.1f} us (ratio to 1 ms target: "
          f"{np.percentile(per_token_ms, 99):.3f})")


if __name__ == "__main__":
    main()

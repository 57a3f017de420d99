"""Load-generator throughput and client-side timing overhead against serve-sim on loopback.

serve-sim runs in its own process(es) on 127.0.0.1, by default in *fast mode* (``--engine
fixed --time-scale 0``: each response, the whole SSE stream, written at once); ``--paced``
uses the fixed 1 ms step engine in real time instead (one write per token step). The load
generator sends open-loop Poisson arrivals at the offered rate, 16-token prompts and
8-token streamed outputs. Reported:

* sustained streamed req/s = requests completed / seconds from the run start to the last token;
* client timing overhead per token = wall time of each connection read callback (HTTP
  framing + SSE parsing + stamping) divided by the tokens it delivered, p50/p99 over the
  callbacks that delivered tokens; and the whole read path's time per token;
* CPU per request of the client and of the server (all its processes), which, unlike wall
  figures, hardly move when other work shares the cores; ``2 cores / (client + server)``
  is the rate the pair could sustain on two otherwise idle cores;
* the 1-minute load average before and after, to show what else was running.

Targets (issue 5): >= 1000 req/s and p99 <= 1 ms on 2 cores.

Run: ``python benchmarks/bench_loadgen.py [--rate 1200] [--seconds 5] [--workers 1] [--paced]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import time

import numpy as np

from fleetsieve.backends.openai import http1, protocol
from fleetsieve.backends.openai.loadgen import ClientOptions, RequestPlan, RunOutcome, run_load

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children (serve-sim workers)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in open(f"/proc/{p}/task/{task}/children").read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ReadTimer:
    """Times every connection read callback and counts the tokens it delivered."""

    def __init__(self) -> None:
        self.per_token_ns: list[float] = []
        self.total_ns = 0
        self.tokens = 0

    def install(self) -> None:
        original_read, original_feed = http1._Connection.data_received, protocol.StreamParser.feed
        timer = self

        def feed(parser: protocol.StreamParser, data: bytes) -> int:
            new = original_feed(parser, data)
            timer.tokens += new
            return new

        def data_received(conn: http1._Connection, data: bytes) -> None:
            before, t0 = timer.tokens, time.perf_counter_ns()
            original_read(conn, data)
            spent = time.perf_counter_ns() - t0
            timer.total_ns += spent
            if timer.tokens > before:
                timer.per_token_ns.append(spent / (timer.tokens - before))

        protocol.StreamParser.feed, http1._Connection.data_received = feed, data_received


def start_server(args: argparse.Namespace, port: int) -> subprocess.Popen:
    mode = ["--step-ms", "1"] if args.paced else ["--time-scale", "0"]
    server = subprocess.Popen([sys.executable, "-m", "fleetsieve.serve_sim", "--model", "m", "--engine", "fixed",
                               *mode, "--workers", str(args.workers), "--port", str(port)],
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if "listening" not in line:
        server.kill()
        raise SystemExit(f"serve-sim did not start: {line!r}")
    return server


def make_plan(rate: float, seconds: float, output_tokens: int) -> RequestPlan:
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1 / rate, int(rate * seconds)))
    n = len(arrivals)
    return RequestPlan(arrivals, np.full(n, 16), np.full(n, output_tokens), float(arrivals[-1]))


def report(args: argparse.Namespace, out: RunOutcome, timer: ReadTimer, client_s: float, server_s: float,
           loads: tuple[float, float]) -> None:
    n = len(out.records)
    ok = [r for r in out.records if r.ok]
    sustained = len(ok) / max(r.end_s for r in ok) if ok else 0.0
    late = np.array([r.start_s - r.scheduled_s for r in out.records]) * 1e3
    per_token_us = np.array(timer.per_token_ns) / 1e3
    client_us, server_us = client_s / n * 1e6, server_s / n * 1e6
    mode = "paced (1 ms steps, real time)" if args.paced else "fast (whole stream per write)"
    print(f"serve-sim {mode}, {args.workers} worker(s); load average {loads[0]:.2f} before, {loads[1]:.2f} after")
    print(f"requests sent {n}, completed {len(ok)}, errors {n - len(ok)}; connections opened {out.connections_opened}")
    print(f"offered {args.rate:.0f} req/s; sustained streamed {sustained:.0f} req/s "
          f"(ratio to 1000 req/s target: {sustained / 1000:.2f})")
    print(f"send lateness vs schedule: p50 {np.percentile(late, 50):.2f} ms, p99 {np.percentile(late, 99):.2f} ms")
    print(f"client timing overhead per token: p50 {np.percentile(per_token_us, 50):.1f} us, "
          f"p99 {np.percentile(per_token_us, 99):.1f} us (ratio to 1 ms target: "
          f"{np.percentile(per_token_us, 99) / 1000:.3f}); whole read path "
          f"{timer.total_ns / 1e3 / max(1, timer.tokens):.1f} us/token")
    print(f"CPU per request: client {client_us:.0f} us, server {server_us:.0f} us; two idle cores would sustain "
          f"~{2e6 / (client_us + server_us):.0f} req/s (ratio to target: {2e3 / (client_us + server_us):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=1200.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--output-tokens", type=int, default=8)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--paced", action="store_true", help="1 ms steps in real time instead of fast mode")
    ap.add_argument("--max-connections", type=int, default=0, help="client connection cap (0 = none)")
    args = ap.parse_args()
    port = free_port()
    server = start_server(args, port)
    plan = make_plan(args.rate, args.seconds, args.output_tokens)
    timer = ReadTimer()
    timer.install()
    try:
        load0, server0, client0 = os.getloadavg()[0], tree_cpu_s(server.pid), client_cpu_s()
        out = run_load(plan, ClientOptions(f"http://127.0.0.1:{port}", "m", request_timeout_s=30,
                                           max_connections=args.max_connections))
        server_s, client_s = tree_cpu_s(server.pid) - server0, client_cpu_s() - client0
    finally:
        server.terminate()
        server.wait(10)
    report(args, out, timer, client_s, server_s, (load0, os.getloadavg()[0]))


if __name__ == "__main__":
    main()

"""Simulated requests per CPU-second: FleetSieve's simulator vs Vidur, on the same cell.

    python benchmarks/bench_sim_vs_vidur.py

Cell (as in PEERS.md): CodeLlama-34B on H100, Azure conversation lengths ("chat"), Poisson arrivals,
500 and 5,000 requests. Vidur (PyPI ``vidur``, optional ``bench`` extra) is run when it can be; the
PyPI package fetches its operator profiles from the Hugging Face hub at run time
(``snapshot_download`` in ``vidur/execution_time_predictor/sklearn_execution_time_predictor.py``,
datasets named by ``BaseExecutionTimePredictorConfig`` in ``vidur/config/config.py``),
so on a machine without internet it cannot run. Then this script prints PEERS.md's figures for
Vidur measured on a machine of this kind, labelled as such, next to ours measured here.
"""

from __future__ import annotations

import time

from fleetsieve.sim import make_engine, run_open_loop
from fleetsieve.sim.workloads import get_workload

MODEL, GPU = "codellama/CodeLlama-34b-Instruct-hf", "h100-sxm"
#: PEERS.md, Vidur on a 2-core machine of this kind (wall time ~ CPU time, single-threaded).
VIDUR_PEERS = {500: 5.0, 5000: 13.4}
#: PEERS.md: about 1.4 ms of simulation per request once Vidur has started.
VIDUR_SIM_ONLY_RPS = 1 / 1.4e-3
REPEATS = 3


def ours(requests: int, tp: int, rate: float) -> tuple[float, int]:
    """CPU seconds for one cell of about ``requests`` requests, engine construction included."""
    stream = get_workload("chat").sample(rate_rps=rate, duration_s=requests / rate, seed=1)
    start = time.process_time()
    engine = make_engine(model=MODEL, gpu=GPU, tp=tp)
    run_open_loop(engine, stream.arrival_s, stream.prompt_tokens, stream.output_tokens,
                  duration_s=requests / rate, warmup_s=0.0)
    return time.process_time() - start, len(stream.arrival_s)


def try_vidur() -> str:
    """Whether Vidur can run here: it needs its profiling datasets from the Hugging Face hub first."""
    try:
        from huggingface_hub import snapshot_download
        from vidur.config.config import BaseExecutionTimePredictorConfig
    except ImportError as err:
        return f"not installed ({err}); install with: pip install 'fleetsieve[bench]'"
    defaults = BaseExecutionTimePredictorConfig()
    for repo_id in (defaults.model_profiling_dataset, defaults.network_profiling_dataset):
        try:
            snapshot_download(repo_id=repo_id, repo_type="dataset")  # what Vidur does before simulating
        except Exception as err:  # the reason is printed, not swallowed
            return f"installed, but cannot fetch its profiles ({repo_id}) from the Hugging Face hub: " \
                   f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return "installed and online: run `python -m vidur.main` on the same cell and compare"


def main() -> None:
    print(f"Vidur here: {try_vidur()}")
    print(f"{'cell':<32}{'ours CPU-s':>11}{'ours req/CPU-s':>15}{'Vidur s':>9}{'Vidur req/s':>12}"
          f"{'ratio':>8}{'ratio vs Vidur sim only':>25}")
    for requests in (500, 5000):
        for tp, rate in ((1, 2.0), (2, 4.0), (4, 8.0), (8, 12.0)):
            cpu, n = min(ours(requests, tp, rate) for _ in range(REPEATS))
            vidur_rps = requests / VIDUR_PEERS[requests]
            label = f"chat TP{tp} {rate:g} req/s x {n} req"
            print(f"{label:<32}{cpu:>11.3f}{n / cpu:>15.0f}{VIDUR_PEERS[requests]:>9.1f}{vidur_rps:>12.0f}"
                  f"{(n / cpu) / vidur_rps:>7.1f}x{(n / cpu) / VIDUR_SIM_ONLY_RPS:>24.1f}x")
    print(f"Vidur columns: PEERS.md (whole cell, start-up included); 'sim only': ~1.4 ms/request = "
          f"{VIDUR_SIM_ONLY_RPS:.0f} req/s. Ours: best of {REPEATS} runs, CPU time, engine construction included.")


if __name__ == "__main__":
    main()

"""Fit the step-time parameters (declared fit set) and report errors on every group of real data.

    python benchmarks/calibrate_report.py            # report with the shipped parameters
    python benchmarks/calibrate_report.py --refit    # refit, write data/fitted_steptime.json, report
    python benchmarks/calibrate_report.py --kv-precision bf16   # fp8-weight rows with a bf16 KV cache

Fit: Qwen/Qwen3-32B, vLLM, H100, bf16, TP 2/4/8, OSL 128/1024 (60 points). Held out: OSL 512
(30 points). Everything else is evaluated with the fitted parameters, never fitted. Validation
files (../shared/data/validation) are read only to report error, when present.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from fleetsieve.sim import calibrate as cal
from fleetsieve.sim.steptime import FITTED_JSON, load_fitted_params, save_fitted_params

VALIDATION = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "validation"


def _group(points, label, pred):
    chosen = [p for p in points if pred(p) and cal.simulatable(p)]
    return label, chosen


def _floor(groups) -> None:
    print("\nReal mean TPOT / roofline floor (100 % of peak, no all-reduce, no overhead; 1.0 = at the hardware limit):")
    for label, runs in groups:
        ratios = [run.tpot_ms / cal.roofline_floor_ms(run) for run in (r.point if isinstance(r, cal.Schedule) else r
                                                                         for r in runs)]
        if ratios:
            print(f"  {label:<48} median {np.median(ratios):5.2f}  min {np.min(ratios):5.2f}")


def _cliff(params) -> None:
    print("\nKV-cache cliff (Qwen3-32B vLLM H100 bf16, ISL 4096, concurrency 128):")
    for p in cal.load_points():
        if cal.is_fit_point(p) or cal.is_held_out_point(p):
            if p.isl == 4096 and p.concurrency == 128:
                ttft, tpot = cal.schedule_for(p).metrics_ms(params)
                print(f"  TP{p.tp} OSL{p.osl:<5} real TTFT {p.ttft_ms:8.0f} ms  sim {ttft:8.0f} ms   "
                      f"real TPOT {p.tpot_ms:6.1f}  sim {tpot:6.1f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--refit", action="store_true")
    parser.add_argument("--kv-precision", default=None, help="KV-cache type for rows evaluated directly (default: "
                                                               "the row's precision)")
    args = parser.parse_args()
    points = cal.load_points()
    fit = [cal.schedule_for(p) for p in points if cal.is_fit_point(p)]
    params = load_fitted_params()
    if args.refit:
        start = time.process_time()
        params = cal.fit_params(fit)
        info = {"fit_set": "Qwen/Qwen3-32B vllm h100_sxm bf16 TP2/4/8 OSL128/1024", "points": len(fit),
                "held_out": "same, OSL 512", "closed_loop_waves": 8, "script": "benchmarks/calibrate_report.py --refit"}
        save_fitted_params(params, info)
        print(f"fitted in {time.process_time() - start:.1f} CPU-s -> {FITTED_JSON}")
    print(params)
    groups = [("fit: Qwen3-32B vLLM H100 bf16 OSL128/1024", fit),
              _group(points, "HELD OUT: Qwen3-32B vLLM H100 bf16 OSL512", cal.is_held_out_point)]
    others = lambda b, m, s, prec=None: (lambda p: p.backend == b and p.model == m and p.system == s
                                         and (prec is None or p.precision == prec) and not cal.is_fit_point(p)
                                         and not cal.is_held_out_point(p))
    groups += [
        _group(points, "Qwen3-32B vLLM H100 fp8 (4000/1000)", others("vllm", "Qwen/Qwen3-32B", "h100_sxm", "fp8")),
        _group(points, "Llama-3.1-8B-FP8 vLLM H200", others("vllm", "nvidia/Llama-3.1-8B-Instruct-FP8", "h200_sxm")),
        _group(points, "[other engine] Qwen3-32B SGLang H100", others("sglang", "Qwen/Qwen3-32B", "h100_sxm")),
        _group(points, "[other engine] Qwen3-32B TRT-LLM H100", others("trtllm", "Qwen/Qwen3-32B", "h100_sxm")),
        _group(points, "[other engine] Llama-3.1-8B TRT-LLM H100", others("trtllm", "meta-llama/Llama-3.1-8B-Instruct", "h100_sxm")),
        _group(points, "[other engine] Llama-3.1-8B SGLang H200", others("sglang", "meta-llama/Llama-3.1-8B-Instruct", "h200_sxm")),
    ]
    validation = VALIDATION / "aiconfigurator_silicon_llama31_70b.csv"
    if validation.exists():
        vpoints = cal.load_points(validation)
        for backend, system in (("vllm", "h100_sxm"), ("vllm", "h200_sxm"), ("trtllm", "h200_sxm")):
            label = f"VALIDATION Llama-3.1-70B fp8 {backend} {system}"
            groups.append(_group(vpoints, label, lambda p, b=backend, s=system: p.backend == b and p.system == s))
    print()
    for label, schedules in groups:
        print(cal.error_report(label, schedules, params, kv_precision=args.kv_precision).line())
    _floor(groups)
    _cliff(params)
    return 0


if __name__ == "__main__":
    sys.exit(main())

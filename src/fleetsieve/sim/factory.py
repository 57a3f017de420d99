"""Build an engine (or its parts) from catalog names: the entry point other modules use."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from fleetsieve.errors import InputError
from fleetsieve.sim.catalog import check_precision, load_catalog
from fleetsieve.sim.engine import Engine, EngineConfig
from fleetsieve.sim.kvcache import KVLayout, kv_layout
from fleetsieve.sim.steptime import StepTimeModel, StepTimeParams, load_fitted_params


def engine_config(**overrides: Any) -> EngineConfig:
    try:
        return EngineConfig(**overrides)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError("engine option", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def make_parts(*, model: str, gpu: str, tp: int, precision: str = "bf16", catalog: str | None = None,
               params: StepTimeParams | None = None, kv_precision: str | None = None,
               **overrides: Any) -> tuple[StepTimeModel, KVLayout, EngineConfig]:
    """Step-time model, KV layout and engine config; raises InputError for unknown names.

    ``kv_precision`` is the KV-cache element type (None: same as the weights).
    """
    if tp < 1:
        raise InputError("--tp", f"tensor-parallel degree must be >= 1, got {tp}")
    cat = load_catalog(catalog)
    arch, hardware = cat.model(model), cat.gpu(gpu)
    check_precision(precision)
    if kv_precision is not None:
        check_precision(kv_precision, "--kv-precision")
    config = engine_config(**overrides)
    layout = kv_layout(arch, hardware, tp, precision, gpu_memory_utilization=config.gpu_memory_utilization,
                       block_size=config.block_size, max_num_batched_tokens=config.max_num_batched_tokens,
                       max_num_seqs=config.max_num_seqs, kv_precision=kv_precision)
    steps = StepTimeModel(arch, hardware, tp, precision, params or load_fitted_params(), kv_precision)
    return steps, layout, config


def model_fits(*, model: str, gpu: str, tp: int, precision: str = "bf16", catalog: str | None = None,
               **overrides: Any) -> bool:
    """Whether the weights leave room for any KV cache at this TP."""
    return make_parts(model=model, gpu=gpu, tp=tp, precision=precision, catalog=catalog, **overrides)[1].fits


def make_engine(*, model: str, gpu: str, tp: int, precision: str = "bf16", catalog: str | None = None,
                params: StepTimeParams | None = None, kv_precision: str | None = None,
                **engine_overrides: Any) -> Engine:
    """A fresh engine; InputError for unknown model/gpu or a model that does not fit at ``tp``."""
    steps, layout, config = make_parts(model=model, gpu=gpu, tp=tp, precision=precision, catalog=catalog,
                                       params=params, kv_precision=kv_precision, **engine_overrides)
    if not layout.fits:
        raise InputError("--tp", f"{model} ({precision}) does not fit on {tp} x {gpu}: "
                                 f"{layout.weights_bytes_per_gpu / 2**30:.1f} GiB of weights per GPU leave no KV cache")
    return Engine(steps, layout, config)

"""The serving simulator: a vLLM-V1-like engine with a calibrated step-time model.

``make_engine`` builds one replica; drive it with ``add_request`` / ``step`` (the serve-sim
server does so in real time), or use ``run_open_loop`` / ``run_closed_loop`` offline.
"""

from fleetsieve.sim.catalog import Catalog, Hardware, ModelArch, load_catalog
from fleetsieve.sim.engine import Engine, EngineConfig, StepOutcome
from fleetsieve.sim.factory import make_engine, make_parts, model_fits
from fleetsieve.sim.kvcache import KVLayout, kv_layout
from fleetsieve.sim.run import SimResult, run_closed_loop, run_open_loop
from fleetsieve.sim.steptime import StepTimeModel, StepTimeParams, load_fitted_params

__all__ = [
    "Catalog", "Engine", "EngineConfig", "Hardware", "KVLayout", "ModelArch", "SimResult", "StepOutcome",
    "StepTimeModel", "StepTimeParams", "kv_layout", "load_catalog", "load_fitted_params", "make_engine",
    "make_parts", "model_fits", "run_closed_loop", "run_open_loop",
]

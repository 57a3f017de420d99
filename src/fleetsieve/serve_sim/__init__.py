"""serve-sim: an OpenAI-compatible streaming server whose token timing comes from the simulator."""

from fleetsieve.serve_sim.app import BadRequest, create_app, parse_request
from fleetsieve.serve_sim.engines import EngineDriver, FixedStepEngine, make_token_source
from fleetsieve.serve_sim.server import DEFAULT_HOST, READY_PREFIX, ServerThread, serve_until_signalled

__all__ = [
    "BadRequest", "DEFAULT_HOST", "EngineDriver", "FixedStepEngine", "READY_PREFIX", "ServerThread",
    "create_app", "make_token_source", "parse_request", "serve_until_signalled",
]

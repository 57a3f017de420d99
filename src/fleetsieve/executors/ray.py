"""The Ray executor: each measurement is a Ray task that needs ``tp`` GPUs, so a cluster runs many at once.

The task rebuilds the backend in the worker from its class path and args (a plugin is a name
plus args; nothing else crosses the wire) and keeps it for later tasks in the same worker.
``gpu_resource`` names the resource a task asks ``tp`` units of: ``"GPU"`` on a real cluster,
a custom resource in tests. A cell needing more GPUs than the whole cluster has, or a task
that dies, comes back as a ``FAILED`` measurement with the reason.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, Mapping

from pydantic import Field

from fleetsieve.backends.base import Backend
from fleetsieve.errors import InputError
from fleetsieve.executors.base import Executor, ExecutorArgs, Finished
from fleetsieve.records import Measurement, Status
from fleetsieve.store.base import Proposal

_WORKER_BACKENDS: dict[tuple[str, str], Backend] = {}


def _worker_backend(class_path: str, args_json: str) -> Backend:
    key = (class_path, args_json)
    if key not in _WORKER_BACKENDS:
        module, _, name = class_path.partition(":")
        backend = getattr(importlib.import_module(module), name)(json.loads(args_json))
        backend.startup()
        _WORKER_BACKENDS[key] = backend
    return _WORKER_BACKENDS[key]


def measure_in_worker(class_path: str, args_json: str, proposal: dict[str, Any], slo: dict[str, float]) -> dict[str, Any]:
    """The body of one Ray task: measure a proposal, return the measurement as a dict."""
    p = Proposal.from_dict(proposal)
    m = _worker_backend(class_path, args_json).measure(p.cell, seed=p.seed, repeat=p.repeat, slo=slo)
    return m.to_dict()


class RayExecutorArgs(ExecutorArgs):
    address: str | None = Field(default=None, description="Ray cluster address; None starts or joins a local one")
    gpu_resource: str = Field(default="GPU", description="resource a task needs `tp` units of")
    num_cpus_per_task: float = Field(default=0.0, ge=0, description="CPUs a task reserves besides its GPUs")


class RayExecutor(Executor):
    """Runs each measurement as a Ray task needing ``tp`` units of ``gpu_resource``."""

    name = "ray"
    Args = RayExecutorArgs

    def start(self, backend: Backend, slots: int) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(address=self.args.address, include_dashboard=False, log_to_driver=False)
        self._ray = ray
        self._task = ray.remote(measure_in_worker)
        cls = type(backend)
        self._backend_ref = (f"{cls.__module__}:{cls.__qualname__}", backend.args.model_dump_json())
        self._capacity = float(ray.cluster_resources().get(self.args.gpu_resource, 0.0))
        if self._capacity <= 0:
            raise InputError("--executor ray", f"the Ray cluster has no {self.args.gpu_resource!r} resource "
                             "(start Ray on GPU nodes, or set gpu_resource to the resource that stands for GPUs)")
        self._refs: dict[Any, Proposal] = {}
        self._refused: Finished = []

    def _resources(self, tp: int) -> dict[str, Any]:
        if self.args.gpu_resource == "GPU":
            return {"num_gpus": tp, "num_cpus": self.args.num_cpus_per_task}
        return {"resources": {self.args.gpu_resource: tp}, "num_cpus": self.args.num_cpus_per_task}

    def submit(self, proposal: Proposal, slo: Mapping[str, float]) -> None:
        tp = proposal.cell.tp
        if tp > self._capacity:
            reason = f"the Ray cluster has {self._capacity:g} {self.args.gpu_resource}, the cell needs {tp}"
            self._refused.append((proposal, Measurement(proposal.cell, Status.FAILED, repeat=proposal.repeat, reason=reason)))
            return
        ref = self._task.options(**self._resources(tp)).remote(*self._backend_ref, proposal.to_dict(), dict(slo))
        self._refs[ref] = proposal

    def wait(self) -> Finished:
        if self._refused:
            refused, self._refused = self._refused, []
            return refused
        if not self._refs:
            return []
        ready, _ = self._ray.wait(list(self._refs), num_returns=1)
        more, _ = self._ray.wait([r for r in self._refs if r not in ready], num_returns=len(self._refs) - 1, timeout=0) \
            if len(self._refs) > 1 else ([], [])
        return [self._collect(ref) for ref in list(self._refs) if ref in set(ready) | set(more)]

    def _collect(self, ref: Any) -> tuple[Proposal, Measurement]:
        proposal = self._refs.pop(ref)
        try:
            return proposal, Measurement.from_dict(self._ray.get(ref))
        except self._ray.exceptions.RayError as err:  # the task died: a failed run, with why
            reason = f"Ray task failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            return proposal, Measurement(proposal.cell, Status.FAILED, repeat=proposal.repeat, reason=reason)

    @property
    def in_flight(self) -> int:
        return len(self._refs) + len(self._refused)

    def shutdown(self) -> None:
        for ref in list(getattr(self, "_refs", {})):
            self._ray.cancel(ref)
        self._refs = {}

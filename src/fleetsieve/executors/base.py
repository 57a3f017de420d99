"""The Executor protocol: how a campaign's measurements are carried out, and in what order they finish.

An executor is a plugin (a ``name`` plus a pydantic ``Args`` model). Lifecycle:
``start(backend, slots)`` once, then any number of ``submit(proposal, slo)`` and ``wait()``,
then ``shutdown()``. ``wait`` blocks until at least one submitted measurement finished and
returns every finished one (``[]`` only when nothing is in flight); the campaign tells each
back at once, so results flow back as they finish.

Executors never invent results: a measurement is what the backend returned, or a ``FAILED``
measurement whose ``reason`` says why the executor could not run it (e.g. a cluster too small
for the cell's TP).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from fleetsieve.backends.base import Backend
from fleetsieve.records import Measurement
from fleetsieve.store.base import Proposal

Finished = list[tuple[Proposal, Measurement]]


class ExecutorArgs(BaseModel):
    """Base for executor argument models: strict and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Executor(ABC):
    """Runs measurements for a campaign. See the module docstring for the contract."""

    name: ClassVar[str]
    Args: ClassVar[type[ExecutorArgs]] = ExecutorArgs

    def __init__(self, args: ExecutorArgs | Mapping[str, Any] | None = None) -> None:
        self.args = args if isinstance(args, ExecutorArgs) else self.Args.model_validate(dict(args or {}))

    @abstractmethod
    def start(self, backend: Backend, slots: int) -> None:
        """Prepare to run up to ``slots`` measurements at once with ``backend`` (already started)."""

    @abstractmethod
    def submit(self, proposal: Proposal, slo: Mapping[str, float]) -> None:
        """Start measuring one proposal."""

    @abstractmethod
    def wait(self) -> Finished:
        """Block until at least one measurement finished; return all finished ones."""

    @property
    @abstractmethod
    def in_flight(self) -> int:
        """How many submitted measurements have not been returned by ``wait`` yet."""

    def shutdown(self) -> None:
        """Release workers. Default: nothing."""

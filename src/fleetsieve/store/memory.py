"""An in-memory store: the default for tests and one-shot runs; nothing survives the process."""

from __future__ import annotations

from fleetsieve.errors import InputError
from fleetsieve.records import Measurement
from fleetsieve.store.base import CampaignSetup, Proposal, Store


class MemoryStore(Store):
    """Keeps everything in lists; same contract as the durable stores."""

    def __init__(self) -> None:
        self.url = "memory://"
        self._setup: CampaignSetup | None = None
        self._proposals: list[Proposal] = []
        self._results: list[tuple[str, Measurement]] = []
        self._ids: set[str] = set()
        self._told: set[str] = set()

    def save_setup(self, setup: CampaignSetup) -> None:
        if self._setup is not None:
            raise InputError(self.url, "a campaign is already stored here")
        self._setup = setup

    def load_setup(self) -> CampaignSetup | None:
        return self._setup

    def add_proposal(self, proposal: Proposal) -> None:
        if proposal.id in self._ids:
            raise InputError(self.url, f"proposal {proposal.id!r} is already stored")
        self._ids.add(proposal.id)
        self._proposals.append(proposal)

    def add_result(self, proposal_id: str, measurement: Measurement) -> None:
        if proposal_id not in self._ids:
            raise InputError(self.url, f"unknown proposal {proposal_id!r}")
        if proposal_id in self._told:
            raise InputError(self.url, f"proposal {proposal_id!r} already has a measurement")
        self._told.add(proposal_id)
        self._results.append((proposal_id, measurement))

    def proposals(self) -> list[Proposal]:
        return list(self._proposals)

    def results(self) -> list[tuple[str, Measurement]]:
        return list(self._results)

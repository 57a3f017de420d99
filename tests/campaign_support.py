"""Shared by the campaign, store, executor and report tests: a tiny strategy and a ready-made setup.

``TinyBisection`` stands in for the real strategies in tests (they live elsewhere and may
change): for every configuration whose capacity is not resolved it proposes the middle
unmeasured level between the proven bounds, round-robin over configurations, so a batch of
``n`` cells spreads over ``n`` configurations. Run as a script, it drives one SQLite campaign
to its end (used by the crash test, which SIGKILLs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fleetsieve.grid import load_grid
from fleetsieve.plan import space_from_grid
from fleetsieve.records import Cell
from fleetsieve.spec import load_spec, spec_to_dict
from fleetsieve.store import CampaignSetup, space_to_dict
from fleetsieve.strategies import ProfilingState, Strategy

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "synthetic" / "fleet.toml"
GRID = REPO / "examples" / "synthetic" / "grid.csv"


class TinyBisection(Strategy):
    name = "tiny-bisection"

    def _candidates(self, state: ProfilingState, config: tuple[str, int]) -> list[Cell]:
        b = state.knowledge.bounds()[config]
        levels = state.knowledge.space.levels[config]
        open_levels = [L for L in levels if b.lo < L <= b.hi and Cell(*config, L) not in state.knowledge.runs
                       and Cell(*config, L) not in state.pending]
        mid = len(open_levels) // 2
        return [Cell(*config, L) for L in open_levels[mid:] + open_levels[:mid]]

    def propose(self, state: ProfilingState, n: int = 1) -> list[Cell]:
        queues = [self._candidates(state, cfg) for cfg in sorted(state.knowledge.space.levels)]
        out: list[Cell] = []
        while len(out) < n and any(queues):
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop(0))
        return out


def replay_setup(seed: int = 0, spec_path: Path = SPEC, grid_path: Path = GRID,
                 strategy: str = "tiny-bisection") -> CampaignSetup:
    spec = load_spec(spec_path)
    space = space_from_grid(spec, load_grid(grid_path))
    return CampaignSetup(spec_to_dict(spec), space_to_dict(space), strategy, {}, "replay",
                         {"grid": str(grid_path)}, seed)


def _main(url: str, seed: int, strategy: str) -> None:
    """What ``fleetsieve run --resume --json`` does, without the CLI's start-up cost."""
    import json

    from fleetsieve.backends.replay import ReplayBackend
    from fleetsieve.campaign import Campaign
    from fleetsieve.store import open_store

    with open_store(url) as store:
        chosen = TinyBisection() if strategy == "tiny-bisection" else None
        campaign = Campaign.open(store, replay_setup(seed, strategy=strategy), chosen, resume=True)
        print(json.dumps(campaign.run(ReplayBackend({"grid": str(GRID)})).to_json()))


if __name__ == "__main__":
    _main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

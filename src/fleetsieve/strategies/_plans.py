"""Certificate plans: which cells would certify the decision if the capacities were known.

Given a plausible capacity per configuration (sampled from the model), proving ``lo = kappa``
takes the cell at ``kappa`` (feasible) and proving ``hi = kappa`` takes the next level
(infeasible). Starting from every proof, the greedy pass drops the most expensive proofs the
certificate does not need, which leaves an irreducible plan. Cells that appear in the plans of
many samples are needed whatever the truth turns out to be.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from fleetsieve.knowledge import Config
from fleetsieve.records import CapacityBounds, Cell
from fleetsieve.strategies._whatif import Bounds, DecisionCache


def _proofs(bounds: Bounds, levels: Mapping[Config, tuple[float, ...]], kappa: Mapping[Config, float]) -> list[tuple[Cell, str]]:
    proofs = []
    for cfg, b in sorted(bounds.items()):
        k = kappa.get(cfg, b.lo)
        if k > b.lo:
            proofs.append((Cell(*cfg, k), "lo"))
        above = [L for L in levels[cfg] if L > k]
        if k < b.hi and above:
            proofs.append((Cell(*cfg, above[0]), "hi"))
    return proofs


def _apply(bounds: Bounds, proofs: list[tuple[Cell, str]], kappa: Mapping[Config, float]) -> dict[Config, CapacityBounds]:
    out = dict(bounds)
    for cell, kind in proofs:
        b = out[cell.config]
        k = kappa[cell.config]
        out[cell.config] = CapacityBounds(k, b.hi) if kind == "lo" else CapacityBounds(b.lo, k)
    return out


def certificate_plan(cache: DecisionCache, bounds: Bounds, levels: Mapping[Config, tuple[float, ...]],
                     kappa: Mapping[Config, float], cost: Callable[[Cell], float], rng: np.random.Generator) -> list[Cell]:
    """An irreducible set of cells that certifies the decision when the capacities are ``kappa``."""
    proofs = _proofs(bounds, levels, kappa)
    keys = rng.random(len(proofs))
    order = sorted(range(len(proofs)), key=lambda i: (-cost(proofs[i][0]), keys[i]))

    def certified(kept: set[int]) -> bool:
        return cache(_apply(bounds, [proofs[j] for j in sorted(kept)], kappa)).certified

    kept = set(range(len(proofs)))
    for i in order:
        if certified(kept - {i}):
            kept.discard(i)
    return [proofs[i][0] for i in sorted(kept)]

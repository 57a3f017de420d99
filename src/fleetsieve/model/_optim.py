"""A small Levenberg-Marquardt solver for MAP fits with an analytic Jacobian.

scipy's ``least_squares`` spends most of its time in SVDs that multi-threaded BLAS makes slow
at this size; the model's problem has ~40 parameters, so normal equations solved directly are
both accurate enough (the priors keep them well conditioned) and fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Solution:
    x: np.ndarray
    jac: np.ndarray
    cost: float
    iterations: int


def levenberg_marquardt(residuals: Callable[[np.ndarray], np.ndarray], jacobian: Callable[[np.ndarray], np.ndarray],
                        x0: np.ndarray, *, max_iter: int = 60, rtol: float = 1e-7) -> Solution:
    """Minimise ``sum(residuals(x)**2)`` from ``x0``."""
    x, r = x0.astype(float), residuals(x0)
    cost, damping = float(r @ r), 1e-3
    for it in range(1, max_iter + 1):
        J = jacobian(x)
        A, g = J.T @ J, J.T @ r
        accepted = False
        while damping < 1e10 and not accepted:
            step = np.linalg.solve(A + damping * np.diag(np.diag(A) + 1e-12), -g)
            r_new = residuals(x + step)
            cost_new = float(r_new @ r_new)
            accepted = cost_new <= cost
            damping = damping / 3 if accepted else damping * 4
        if not accepted:
            break
        x, r, done = x + step, r_new, cost - cost_new <= rtol * max(cost, 1e-12)
        cost = cost_new
        if done:
            break
    return Solution(x, jacobian(x), cost, it)

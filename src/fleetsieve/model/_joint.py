"""The joint capacity and tail-latency model.

Per (workload w, TP degree t) the saturation rate is ``mu = exp(ls_w + e * log t + delta_wt)``:
a per-workload scale, a per-GPU efficiency curve shared by every workload (log-linear in
log t, prior ``e ~ N(0.85, 0.3)``) and a small shrunk deviation per configuration. Each
modelled latency metric m (the SLO keys, e.g. ``p99_e2el_ms``) follows

    log y = a_wm + b_mt + d_wtm + c_wm * phi(load / mu),   phi(rho) = -log(1 - rho)  (queueing blow-up),

with per-configuration deviations ``d_wtm`` and ``log c_wm - log c_m`` shrunk towards zero
(partial pooling: a configuration with data gets its own curve, one without borrows), continued linearly past ``rho_cap`` so a saturated cell stays finite. Parameters are fitted
jointly by MAP (regularised least squares, ``scipy.optimize.least_squares``) over all cells,
with censored evidence (keeps-up, saturated throughput, aborted-as-infeasible) as hinge
residuals. Uncertainty is Laplace: parameter draws from N(MAP, (J^T J)^-1) plus the residual
scale, so ``predict`` returns a distribution per cell, never a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.special import ndtr

from fleetsieve.errors import InputError
from fleetsieve.model._data import Index, Observations, build_observations
from fleetsieve.model._optim import levenberg_marquardt
from fleetsieve.records import Cell, Measurement

#: Residual scales (log units) of the censored evidence: throughput is measured tightly.
_MU_SD = 0.05
_SAT_SD = 0.1


class _Layout:
    """Slices of the flat parameter vector."""

    def __init__(self, W: int, T: int, M: int) -> None:
        self.W, self.T, self.M = W, T, M
        sizes = {"ls": W, "e": 1, "delta": W * T, "a": W * M, "b": M * T, "lc": M, "acfg": W * T * M, "lcw": W * M}
        self.slices, start = {}, 0
        for name, size in sizes.items():
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start

    def part(self, theta: np.ndarray, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """One parameter block of ``theta`` ([..., P]) reshaped to [..., *shape]."""
        return theta[..., self.slices[name]].reshape(theta.shape[:-1] + shape)


def _phi(rho: np.ndarray, cap: float) -> np.ndarray:
    clipped = np.clip(rho, 0.0, cap)
    return -np.log1p(-clipped) + np.maximum(rho - cap, 0.0) / (1.0 - cap)


def _dphi(rho: np.ndarray, cap: float) -> np.ndarray:
    return 1.0 / (1.0 - np.clip(rho, 0.0, cap))


@dataclass(frozen=True)
class TailPrediction:
    """Predictive distribution per cell: log-normal metrics, log-normal saturation rate, P(feasible)."""

    cells: tuple[Cell, ...]
    metrics: tuple[str, ...]
    log_mean: np.ndarray  # [cells, metrics], log of the metric's unit (ms)
    log_sd: np.ndarray  # [cells, metrics], parameter uncertainty and residual scale together
    log_mu_mean: np.ndarray  # [cells], log requests/s
    log_mu_sd: np.ndarray
    feasible_prob: np.ndarray  # [cells]

    def quantile(self, metric: str, q: float) -> np.ndarray:
        """The q-quantile of ``metric`` (its own unit, e.g. ms) for every cell."""
        from scipy.special import ndtri

        j = self.metrics.index(metric)
        return np.exp(self.log_mean[:, j] + self.log_sd[:, j] * float(ndtri(q)))

    def saturation_quantile(self, q: float) -> np.ndarray:
        """The q-quantile of the saturation rate mu (requests/s per replica)."""
        from scipy.special import ndtri

        return np.exp(self.log_mu_mean + self.log_mu_sd * float(ndtri(q)))

    def p_feasible(self) -> np.ndarray:
        """P(the cell meets every SLO of its workload and keeps up with its load)."""
        return self.feasible_prob


class JointTailModel:
    """Joint capacity and tail-latency model (scikit-learn estimator discipline)."""

    def __init__(self, *, saturation_tol: float = 0.05, tp_exponent_prior: tuple[float, float] = (0.85, 0.3),
                 config_sd: float = 0.25, latency_sd: float = 0.15, rho_cap: float = 0.97,
                 noise_floor: float = 0.03, n_draws: int = 64, random_state: int = 0) -> None:
        self.saturation_tol = saturation_tol
        self.tp_exponent_prior = tp_exponent_prior
        self.config_sd = config_sd
        self.latency_sd = latency_sd
        self.rho_cap = rho_cap
        self.noise_floor = noise_floor
        self.n_draws = n_draws
        self.random_state = random_state

    # ----- fitting -------------------------------------------------------------------------
    def fit(self, measurements: Sequence[Measurement], *, slo: Mapping[str, Mapping[str, float]],
            tps: Sequence[int] = ()) -> "JointTailModel":
        """Fit to ``measurements``; ``slo`` maps workload -> {metric key: bound (ms)}."""
        metrics = tuple(sorted({k for bounds in slo.values() for k in bounds}))
        workloads = tuple(sorted(set(slo) | {m.cell.workload for m in measurements}))
        all_tps = tuple(sorted(set(tps) | {m.cell.tp for m in measurements}))
        self.index_ = Index(workloads, all_tps, metrics)
        self.slo_ = {w: dict(b) for w, b in slo.items()}
        self.layout_ = _Layout(len(workloads), len(all_tps), len(metrics))
        obs = build_observations(measurements, self.index_, slo, self.saturation_tol)
        self.prior_mean_, self.prior_sd_ = self._priors(obs)
        result = levenberg_marquardt(lambda th: self._residuals(th, obs), lambda th: self._jacobian(th, obs), self.prior_mean_)
        self.theta_ = result.x
        self.sigma_ = self._residual_scale(obs)
        self.cov_ = self._laplace_cov(result.jac)
        self.n_observations_ = obs.n_latency
        return self

    def _priors(self, obs: Observations) -> tuple[np.ndarray, np.ndarray]:
        L = self.layout_
        mean, sd = np.zeros(L.size), np.ones(L.size)
        e0, e_sd = self.tp_exponent_prior
        mean[L.slices["ls"]], sd[L.slices["ls"]] = self._scale_guess(obs, e0), 1.5
        mean[L.slices["e"]], sd[L.slices["e"]] = e0, e_sd
        sd[L.slices["delta"]] = self.config_sd
        mean[L.slices["a"]], sd[L.slices["a"]] = self._base_guess(obs), 3.0
        sd[L.slices["b"]] = 0.5
        mean[L.slices["lc"]], sd[L.slices["lc"]] = math.log(0.7), 0.7
        sd[L.slices["acfg"]] = self.config_sd
        sd[L.slices["lcw"]] = self.config_sd
        return mean, sd

    def _scale_guess(self, obs: Observations, e0: float) -> np.ndarray:
        """Per-workload log scale: above the highest load kept up, below the lowest saturation."""
        log_tp = np.log(np.asarray(self.index_.tps, dtype=float))
        guess = np.zeros(self.layout_.W)
        for w in range(self.layout_.W):
            kept = obs.up_log_load[obs.up_w == w] - e0 * log_tp[obs.up_t[obs.up_w == w]]
            sat = obs.sat_log_thr[obs.sat_w == w] - e0 * log_tp[obs.sat_t[obs.sat_w == w]]
            guess[w] = np.median(sat) if len(sat) else (kept.max() + 0.3 if len(kept) else 0.0)
        return guess

    def _base_guess(self, obs: Observations) -> np.ndarray:
        """Per-(workload, metric) log level: the lowest observed value, else a third of the SLO."""
        W, M = self.layout_.W, self.layout_.M
        guess = np.zeros((W, M))
        for w, name in enumerate(self.index_.workloads):
            for j, key in enumerate(self.index_.metrics):
                seen = obs.lat_log[(obs.lat_w == w) & (obs.lat_m == j)]
                bound = self.slo_.get(name, {}).get(key)
                guess[w, j] = seen.min() if len(seen) else (math.log(bound / 3) if bound else 0.0)
        return guess.ravel()

    def _log_mu(self, theta: np.ndarray) -> np.ndarray:
        """[..., W, T] log saturation rates."""
        L = self.layout_
        log_tp = np.log(np.asarray(self.index_.tps, dtype=float))
        ls = L.part(theta, "ls", (L.W, 1))
        e = L.part(theta, "e", (1, 1))
        return ls + e * log_tp + L.part(theta, "delta", (L.W, L.T))

    def _log_metric(self, theta: np.ndarray, log_mu: np.ndarray, w: np.ndarray, t: np.ndarray,
                    m: np.ndarray, load: np.ndarray) -> np.ndarray:
        L = self.layout_
        a, b = L.part(theta, "a", (L.W, L.M)), L.part(theta, "b", (L.M, L.T))
        acfg = L.part(theta, "acfg", (L.W, L.T, L.M))
        c = np.exp(L.part(theta, "lc", (1, L.M)) + L.part(theta, "lcw", (L.W, L.M)))
        rho = load / np.exp(log_mu[..., w, t])
        return a[..., w, m] + b[..., m, t] + acfg[..., w, t, m] + c[..., w, m] * _phi(rho, self.rho_cap)

    def _residuals(self, theta: np.ndarray, obs: Observations) -> np.ndarray:
        log_mu = self._log_mu(theta)
        lat = (obs.lat_log - self._log_metric(theta, log_mu, obs.lat_w, obs.lat_t, obs.lat_m, obs.lat_load)) / self.latency_sd
        up = np.maximum(obs.up_log_load - log_mu[obs.up_w, obs.up_t], 0.0) / _MU_SD
        sat = (obs.sat_log_thr - log_mu[obs.sat_w, obs.sat_t]) / _SAT_SD
        return np.concatenate([lat, up, sat, self._aborted_residuals(theta, log_mu, obs),
                               (theta - self.prior_mean_) / self.prior_sd_])

    def _jacobian(self, theta: np.ndarray, obs: Observations) -> np.ndarray:
        """d residuals / d theta, row for row as ``_residuals`` stacks them."""
        log_mu = self._log_mu(theta)
        lat = -self._d_metric(theta, log_mu, obs.lat_w, obs.lat_t, obs.lat_m, obs.lat_load) / self.latency_sd
        active = (obs.up_log_load - log_mu[obs.up_w, obs.up_t] > 0)[:, None]
        up = -self._d_log_mu(obs.up_w, obs.up_t) * active / _MU_SD
        sat = -self._d_log_mu(obs.sat_w, obs.sat_t) / _SAT_SD
        return np.vstack([lat, up, sat, self._aborted_jacobian(theta, log_mu, obs), np.diag(1.0 / self.prior_sd_)])

    def _d_log_mu(self, w: np.ndarray, t: np.ndarray) -> np.ndarray:
        L, rows = self.layout_, np.arange(len(w))
        J = np.zeros((len(w), L.size))
        J[rows, L.slices["ls"].start + w] = 1.0
        J[rows, L.slices["e"].start] = np.log(np.asarray(self.index_.tps, dtype=float))[t]
        J[rows, L.slices["delta"].start + w * L.T + t] = 1.0
        return J

    def _d_metric(self, theta: np.ndarray, log_mu: np.ndarray, w: np.ndarray, t: np.ndarray,
                  m: np.ndarray, load: np.ndarray) -> np.ndarray:
        """d log(metric) / d theta for each (w, t, m, load) row."""
        L, rows = self.layout_, np.arange(len(w))
        c = np.exp(L.part(theta, "lc", (1, L.M)) + L.part(theta, "lcw", (L.W, L.M)))[w, m]
        rho = load / np.exp(log_mu[w, t])
        J = self._d_log_mu(w, t) * (-c * _dphi(rho, self.rho_cap) * rho)[:, None]
        J[rows, L.slices["a"].start + w * L.M + m] = 1.0
        J[rows, L.slices["b"].start + m * L.T + t] = 1.0
        J[rows, L.slices["acfg"].start + (w * L.T + t) * L.M + m] = 1.0
        J[rows, L.slices["lc"].start + m] = c * _phi(rho, self.rho_cap)
        J[rows, L.slices["lcw"].start + w * L.M + m] = c * _phi(rho, self.rho_cap)
        return J

    def _aborted_jacobian(self, theta: np.ndarray, log_mu: np.ndarray, obs: Observations) -> np.ndarray:
        n = len(obs.ab_load)
        if not n:
            return np.zeros((0, self.layout_.size))
        M = self.layout_.M
        pred = np.stack([self._log_metric(theta, log_mu, obs.ab_w, obs.ab_t, np.full(n, j), obs.ab_load) for j in range(M)], axis=1)
        margin = pred - obs.ab_log_slo
        worst = np.argmax(margin, axis=1)
        active = (margin[np.arange(n), worst] < 0)[:, None]
        return -self._d_metric(theta, log_mu, obs.ab_w, obs.ab_t, worst, obs.ab_load) * active / self.latency_sd

    def _aborted_residuals(self, theta: np.ndarray, log_mu: np.ndarray, obs: Observations) -> np.ndarray:
        """An aborted run had some metric over its SLO: penalise predictions that are all under."""
        if not len(obs.ab_load):
            return np.zeros(0)
        n, M = obs.ab_log_slo.shape
        rows = np.repeat(np.arange(n), M)
        cols = np.tile(np.arange(M), n)
        pred = self._log_metric(theta, log_mu, obs.ab_w[rows], obs.ab_t[rows], cols, obs.ab_load[rows]).reshape(n, M)
        margin = np.max(pred - obs.ab_log_slo, axis=1)
        return np.maximum(-margin, 0.0) / self.latency_sd

    def _residual_scale(self, obs: Observations) -> float:
        """Latency residual sd (log units), shrunk towards ``latency_sd`` by three pseudo-observations."""
        log_mu = self._log_mu(self.theta_)
        raw = obs.lat_log - self._log_metric(self.theta_, log_mu, obs.lat_w, obs.lat_t, obs.lat_m, obs.lat_load)
        ss = float(np.sum(raw ** 2)) + 3 * self.latency_sd ** 2
        return max(self.noise_floor, math.sqrt(ss / (len(raw) + 3)))

    def _laplace_cov(self, jac: np.ndarray) -> np.ndarray:
        info = jac.T @ jac
        scale = max(1.0, self.sigma_ / self.latency_sd) ** 2
        return np.linalg.inv(info) * scale

    # ----- prediction ----------------------------------------------------------------------
    def _draws(self) -> np.ndarray:
        """Parameter draws from the Laplace posterior (the MAP itself first)."""
        rng = np.random.default_rng(self.random_state)
        root = np.linalg.cholesky((self.cov_ + self.cov_.T) / 2 + 1e-10 * np.eye(len(self.theta_)))
        z = rng.standard_normal((max(self.n_draws - 1, 0), len(self.theta_)))
        return np.vstack([self.theta_, self.theta_ + z @ root.T])

    def _cell_arrays(self, cells: Sequence[Cell]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = self.index_
        unknown = [c for c in cells if c.workload not in idx.workloads or c.tp not in idx.tps]
        if unknown:
            raise InputError("model.predict", f"cell {unknown[0]} has a workload or TP the model was not fitted for")
        w = np.array([idx.w(c.workload) for c in cells], dtype=np.int64)
        t = np.array([idx.t(c.tp) for c in cells], dtype=np.int64)
        return w, t, np.array([c.load_rps for c in cells], dtype=float)

    def _log_slo(self, cells: Sequence[Cell]) -> np.ndarray:
        rows = [[math.log(self.slo_.get(c.workload, {}).get(k, math.inf)) for k in self.index_.metrics] for c in cells]
        return np.asarray(rows, dtype=float).reshape(len(cells), len(self.index_.metrics))

    def predict(self, cells: Sequence[Cell], slo_margin: float = 1.0) -> TailPrediction:
        """The predictive distribution of every cell's tail metrics, saturation rate and feasibility.

        ``slo_margin`` < 1 asks for P(every metric under ``slo_margin`` x its SLO): the chance a
        verdict rule that needs a margin of confidence can show the cell feasible.
        """
        w, t, load = self._cell_arrays(cells)
        draws = self._draws()
        log_mu = self._log_mu(draws)  # [S, W, T]
        M = len(self.index_.metrics)
        pred = np.stack([self._log_metric(draws, log_mu, w, t, np.full(len(cells), j), load) for j in range(M)], axis=-1)
        mu_cells = log_mu[:, w, t]
        keeps_up = ndtr((mu_cells - np.log((1 - self.saturation_tol) * load)) / _MU_SD)
        under = ndtr((self._log_slo(cells)[None] + math.log(slo_margin) - pred) / self.sigma_).prod(axis=-1)
        log_sd = np.sqrt(pred.var(axis=0) + self.sigma_ ** 2)
        return TailPrediction(tuple(cells), self.index_.metrics, pred.mean(axis=0), log_sd,
                              mu_cells.mean(axis=0), mu_cells.std(axis=0), (keeps_up * under).mean(axis=0))

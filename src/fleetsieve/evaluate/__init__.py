"""Evaluation harness behind ``fleetsieve compare``: reveal-order replays of profiling strategies
against a full grid, savings vs random with bootstrap CIs, the hindsight-minimal certificate,
and the loss of deciding from sparse or capacity-only evidence."""

from fleetsieve.evaluate.bootstrap import Saving, saving_vs_random
from fleetsieve.evaluate.experiment import Experiment, order_seed, registered_factories, run_experiment
from fleetsieve.evaluate.hindsight import HindsightCertificate, hindsight_certificate
from fleetsieve.evaluate.loss import CapacityOnlyDecision, Loss, capacity_only_decision, sparse_random_loss
from fleetsieve.evaluate.metrics import OrderOutcome, outcome_of
from fleetsieve.evaluate.replay import Step, Trace, replay
from fleetsieve.evaluate.truth import Truth, build_truth

__all__ = [
    "CapacityOnlyDecision", "Experiment", "HindsightCertificate", "Loss", "OrderOutcome", "Saving", "Step",
    "Trace", "Truth", "build_truth", "capacity_only_decision", "hindsight_certificate", "order_seed",
    "outcome_of", "registered_factories", "replay", "run_experiment", "saving_vs_random", "sparse_random_loss",
]

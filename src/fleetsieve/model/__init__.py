"""The joint capacity and tail-latency model, and capacity distributions built from it."""

from __future__ import annotations

from fleetsieve.model._capacity import CapacityDistribution, capacity_distribution
from fleetsieve.model._joint import JointTailModel, TailPrediction

__all__ = ["CapacityDistribution", "JointTailModel", "TailPrediction", "capacity_distribution"]

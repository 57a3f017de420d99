"""The Ray executor on a local Ray instance, with a custom resource standing in for GPUs."""

from __future__ import annotations

import pytest

from campaign_support import GRID, TinyBisection, replay_setup
from fleetsieve.backends.replay import ReplayBackend
from fleetsieve.campaign import Campaign
from fleetsieve.executors import SimulatedClockExecutor
from fleetsieve.executors.ray import RayExecutor
from fleetsieve.records import Cell, Status
from fleetsieve.store import MemoryStore, Proposal

ray = pytest.importorskip("ray")
FAKE_GPUS = 8


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, resources={"fake_gpu": FAKE_GPUS}, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_campaign_on_ray_matches_the_local_decision(local_ray):
    executor = RayExecutor({"gpu_resource": "fake_gpu"})
    on_ray = Campaign.open(MemoryStore(), replay_setup(), TinyBisection()).run(ReplayBackend({"grid": str(GRID)}),
                                                                              executor, parallel=4)
    local = Campaign.open(MemoryStore(), replay_setup(), TinyBisection()).run(ReplayBackend({"grid": str(GRID)}),
                                                                             SimulatedClockExecutor(), parallel=1)
    assert on_ray.decision.certified
    # Finish order on Ray varies, so the certified decisions may differ, but only within the spec's tolerance.
    ray_obj, local_obj = on_ray.decision.conservative.objective, local.decision.conservative.objective
    assert abs(ray_obj.min_fulfilment - local_obj.min_fulfilment) <= 0.01
    assert abs(ray_obj.served_rps - local_obj.served_rps) <= 0.05
    assert on_ray.in_flight == 0


@pytest.mark.slow
def test_tasks_need_tp_units_and_too_big_cells_fail_with_a_reason(local_ray):
    executor = RayExecutor({"gpu_resource": "fake_gpu"})
    executor.start(ReplayBackend({"grid": str(GRID)}), slots=4)
    fits = Proposal("p0", 0, Cell("chat", 8, 1.464), 0, 0)  # needs all 8 units
    too_big = Proposal("p1", 1, Cell("chat", 16, 0.5), 0, 0)
    executor.submit(fits, {}), executor.submit(too_big, {})
    assert executor._resources(8) == {"resources": {"fake_gpu": 8}, "num_cpus": 0.0}
    finished = {}
    while executor.in_flight:
        finished.update({p.id: m for p, m in executor.wait()})
    executor.shutdown()
    assert finished["p0"].status is Status.OK and finished["p0"].cell == fits.cell
    assert finished["p1"].status is Status.FAILED and "needs 16" in finished["p1"].reason


@pytest.mark.slow
def test_a_cluster_without_the_resource_is_refused(local_ray):
    from fleetsieve.errors import InputError

    with pytest.raises(InputError, match="has no 'GPU' resource"):
        RayExecutor().start(ReplayBackend({"grid": str(GRID)}), slots=1)

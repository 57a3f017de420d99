import asyncio
import time

import pytest

from fleetsieve.serve_sim.engines import EngineDriver, FixedStepEngine


def test_fixed_engine_emits_one_token_per_step_and_charges_prefill():
    e = FixedStepEngine(step_s=0.01, prefill_s_per_token=0.001)
    e.add_request(0, 100, 2, 0.0)
    first = e.step()
    assert first.duration_s == pytest.approx(0.11) and first.new_tokens == {0: 1} and first.finished == ()
    e.add_request(1, 10, 1, 0.0)
    second = e.step()
    assert second.new_tokens == {0: 1, 1: 1} and set(second.finished) == {0, 1}
    assert e.step() is None and not e.has_work


def run_driver(time_scale, step_s, outputs):
    async def main():
        driver = EngineDriver(FixedStepEngine(step_s=step_s), time_scale=time_scale)
        driver.start()
        seen = {i: [] for i in range(len(outputs))}
        done = {i: asyncio.Event() for i in range(len(outputs))}
        for i, n in enumerate(outputs):
            def sink(count, finished, i=i):
                seen[i].append(count)
                if finished:
                    done[i].set()
            driver.submit(10, n, sink)
        t0 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(d.wait() for d in done.values())), 10)
        wall = time.monotonic() - t0
        await driver.close()
        return seen, wall, driver.virtual_now
    return asyncio.run(main())


def test_driver_paces_steps_in_scaled_real_time():
    seen, wall, virtual = run_driver(time_scale=0.5, step_s=0.04, outputs=[5, 3])
    assert [sum(v) for v in seen.values()] == [5, 3]
    assert virtual == pytest.approx(0.2, abs=0.02)  # 5 steps of 40 ms of model time
    assert wall == pytest.approx(0.1, abs=0.05)  # ... played at half speed


def test_driver_fast_mode_does_not_sleep():
    seen, wall, virtual = run_driver(time_scale=0.0, step_s=1.0, outputs=[50])
    assert sum(seen[0]) == 50 and virtual == pytest.approx(50.0) and wall < 1.0

"""The first start's progress (``cache.DemoStatus``): an overall estimate of the time left, extrapolated from the
build's own progress, and no estimate until there is enough progress to extrapolate from."""

from __future__ import annotations

import pytest

from ov3d_app import cache


@pytest.mark.parametrize("fraction, elapsed, left", [(0.25, 10.0, 30.0), (0.5, 40.0, 40.0), (0.9, 90.0, 10.0)])
def test_the_estimate_extrapolates_the_overall_progress(fraction, elapsed, left):
    assert cache.DemoStatus(fraction=fraction, elapsed=elapsed).eta == pytest.approx(left)


@pytest.mark.parametrize("status", [cache.DemoStatus(fraction=0.01, elapsed=20.0),  # too little progress
                                    cache.DemoStatus(fraction=0.5, elapsed=1.0),  # too early
                                    cache.DemoStatus(fraction=1.0, elapsed=9.0, path="benchmark.yaml")])  # done
def test_no_estimate_without_enough_to_go_on(status):
    assert status.eta is None


def test_a_demo_already_on_disk_is_found_without_a_progress_phase(tiny_demo):
    s = cache.demo_status()  # the first poll waits up to 0.5 s for the check of the folder on disk
    assert s.error is None and s.path == str(tiny_demo / "benchmark.yaml")  # ready at once: no progress bar
    assert cache.demo_ready() == s.path

"""Shared fixtures and the GPU marker policy.

GPU tests carry ``@pytest.mark.gpu``.  Where no GPU (or no driver) is found they
skip with the reason; with ``PYGRAPHRT_REQUIRE_GPU=1`` that skip is a failure,
so a GPU run cannot pass by skipping.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_GPU = os.environ.get("PYGRAPHRT_REQUIRE_GPU") == "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a GPU and its driver")
    config.addinivalue_line("markers", "headers: needs the pinned vendor headers (python -m bindgen fetch)")
    config.addinivalue_line("markers", "devtools: needs the dev extras (mypy)")
    config.addinivalue_line("markers", "devices(n): needs n devices of the backend it runs on (see "
                                       "require_devices)")
    config.addinivalue_line("markers", "wheels: builds a wheel with scripts/wheels and installs it (minutes; "
                                       "tests/test_wheel.py)")


_gpu_reason: list[str | None] = []


def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a device is usable."""
    if not _gpu_reason:
        reason = None
        try:
            import pygraphrt

            info = pygraphrt.backend()
            if info.device_count < 1:
                reason = f"{info.vendor} runtime {info.library_path} loaded but reports no device" + (
                    f": {info.device_error}" if info.device_error else "")
        except Exception as exc:  # no library, no driver, no device
            reason = f"{type(exc).__name__}: {exc}"
        _gpu_reason.append(reason)
    return _gpu_reason[0]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is None:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    if REQUIRE_GPU:
        pytest.fail(f"PYGRAPHRT_REQUIRE_GPU=1 but no GPU is usable: {reason}", pytrace=False)
    pytest.skip(f"no GPU: {reason}")


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """A test that used a second GPU leaves the next test a one-device backend again: the record
    of several devices in use turns the compiled hot paths' C off (pygraphrt.multidevice), which
    the tests of those paths expect on.  (The simulators are the tests' own business.)"""
    from pygraphrt import _runtime

    b = _runtime._state.active
    if b is not None and getattr(b, "several", False) and b.vendor != "sim":
        from pygraphrt import multidevice

        multidevice._reset_several(b)


def require_devices(n: int, backend: object = None) -> None:
    """Skip, saying why, unless the active backend (or ``backend``) has at least ``n`` devices.

    On a GPU backend with ``PYGRAPHRT_REQUIRE_GPU=1`` too few devices is a failure instead, so a
    multi-GPU run cannot pass by skipping; the simulator's device count is a setting
    (``PYGRAPHRT_SIM_DEVICES``), and a simulator with too few devices always skips.
    """
    from pygraphrt import _runtime

    b = backend if backend is not None else _runtime.active()
    have = b.device_count()  # type: ignore[attr-defined]
    if have >= n:
        return
    vendor = b.vendor  # type: ignore[attr-defined]
    why = f"needs {n} devices; the {vendor} backend has {have}"
    if vendor == "sim":
        pytest.skip(f"{why} (PYGRAPHRT_SIM_DEVICES={n} gives the simulator {n})")
    if REQUIRE_GPU:
        pytest.fail(f"PYGRAPHRT_REQUIRE_GPU=1 but this test {why}: run it on a machine with {n} GPUs",
                    pytrace=False)
    pytest.skip(f"{why}: run it on a machine with {n} GPUs")


@pytest.fixture
def devices(request: pytest.FixtureRequest) -> int:
    """The device count the test's ``@pytest.mark.devices(n)`` asks for, checked against the active
    backend (:func:`require_devices`); request it after the fixture that selects the backend."""
    marker = request.node.get_closest_marker("devices")
    n = int(marker.args[0]) if marker is not None and marker.args else 1
    require_devices(n)
    return n

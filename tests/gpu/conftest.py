"""Fixtures shared by the GPU tests."""

from __future__ import annotations

import pytest

import pygraphrt as rt
from pygraphrt.enums import CaptureStatus


@pytest.fixture
def stream():
    """A created stream, checked to be left not capturing, then closed."""
    s = rt.Stream()
    yield s
    assert s.capture_status is CaptureStatus.NONE, "a test left the stream capturing"
    s.close()

"""HIP 7.1 has no conditional nodes: pygraphrt says so, naming the runtime, and leaves nothing behind."""

from __future__ import annotations

import pytest

from tests.test_hip_fake import fake_hip, run_hip  # noqa: F401 - the fixture is used by name

pytestmark = pytest.mark.headers


def test_conditional_nodes_are_not_supported_on_hip(fake_hip):  # noqa: F811
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        assert rt.capabilities().conditional_nodes is False
        g = rt.Graph()
        for call in (lambda: g.conditional_handle(), lambda: g.add_if(None),
                     lambda: g.add_switch(None, 2)):
            try:
                call()
            except errors.NotSupported as e:
                print("NS", e.vendor, e.detail)
        with rt.Stream() as s:
            with s.capture() as cap:
                try:
                    cap.conditional_handle()
                except errors.NotSupported as e:
                    print("CAP", e.detail)
            print("capturing", s.is_capturing, len(g.nodes()))
    """)
    lines = out.splitlines()
    assert lines[:3] == ["NS hip conditional nodes need CUDA >= 12.4; this runtime is hip 7.1.25424"] * 3
    assert lines[3] == "CAP conditional nodes need CUDA >= 12.4; this runtime is hip 7.1.25424"
    assert lines[4] == "capturing False 0"

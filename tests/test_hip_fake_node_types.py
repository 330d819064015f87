"""HIP's own node types through the fake HIP library: batch memory operations, memcpy to/from
a symbol (call forms checked by the C compiler against HIP's prototypes; readback where HIP has it)."""

from __future__ import annotations

import pytest

from tests.test_hip_fake import fake_hip, run_hip  # noqa: F401 - the fixture is used by name

pytestmark = pytest.mark.headers


def test_batch_mem_op_and_symbol_nodes(fake_hip):  # noqa: F811
    out = run_hip(fake_hip, """
        import pygraphrt as rt
        from pygraphrt import errors
        from pygraphrt.enums import NodeType
        from pygraphrt.graph import MemOp, BatchMemOpNode
        g = rt.Graph()
        ops = [MemOp.write_value(0x1000, 7), MemOp.wait_value(0x2000, 1 << 40, bits=64, flags=1),
               MemOp.barrier()]
        b = g.add_batch_mem_op(ops)
        assert isinstance(b, BatchMemOpNode) and b.type is NodeType.BATCH_MEM_OP
        assert b.params == {"ops": ops, "flags": 0}, b.params
        b.set_params([MemOp.flush_remote_writes()], flags=0)
        assert b.params["ops"] == [MemOp("flush")]
        buf = bytearray(16)
        to = g.add_memcpy_to_symbol(0x5000, buf, 16, dependencies=[b])
        frm = to.graph.add_memcpy_from_symbol(buf, 0x5000, 8, offset=8, dependencies=[to])
        assert [n.type for n in g.nodes()] == [NodeType.BATCH_MEM_OP, NodeType.MEMCPY_TO_SYMBOL,
                                               NodeType.MEMCPY_FROM_SYMBOL]
        to.set_params(0x6000, buf, 4)
        try:
            to.params
        except errors.NotSupported as e:
            print("NS", e.detail)
        exe = g.instantiate()
        exe.set_batch_mem_op(b, [MemOp.write_value(0x1000, 9)])
        exe.set_memcpy_from_symbol(frm, buf, 0x6000, 4)
        for bad in (lambda: g.add_batch_mem_op([]), lambda: g.add_batch_mem_op([MemOp("wait", 1, 1, 16)]),
                    lambda: exe.set_batch_mem_op(to, [MemOp.barrier()])):
            try:
                bad()
            except errors.InvalidValue as e:
                print("IV", e.detail)
        print("nodes", len(g.nodes()))
    """)
    lines = out.splitlines()
    assert lines[0] == "NS HIP has no readback of memcpy-symbol nodes"
    assert lines[1] == "IV give one or more MemOp operations"
    assert lines[2].startswith("IV MemOp(kind='wait'") and "bits=32 or 64" in lines[2]
    assert lines[3] == "IV expected a BatchMemOpNode"
    assert lines[4] == "nodes 3"

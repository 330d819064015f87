"""The simulator's answers to the runtime's several-device calls: peer access, peer-to-peer
attributes, pointer attributes, pool access and a stream's device.

A section of :class:`._api.SimRuntime` (same conventions as the other ``_rt_*`` sections: methods named like the C functions,
taking the ``cuda13`` binding's cffi arguments, writing outputs through the given pointers and
raising :class:`SimError` for the ``cudaError_t`` they return).  What is modelled: the answers
the runtime documents for valid and invalid ordinals, the per-context record of enabled peers
(``cudaErrorPeerAccessAlreadyEnabled`` / ``cudaErrorPeerAccessNotEnabled``), each pool's
access table (its own device always reads and writes), and which device's memory an address
is, and whether a kernel on one device may touch another device's memory.

The simulated devices reach each other (an NVLink machine) unless the simulator was made
without peer access (``SimRuntime(peer_access=False)``, ``PYGRAPHRT_SIM_PEER_ACCESS=0``: a
machine without P2P, where ``cudaDeviceCanAccessPeer`` answers 0 and enabling it is refused).
Copies between devices need no peer access either way (the runtime stages them).  A kernel
touching another device's memory without access faults on a GPU (an illegal address, which
poisons the context): the simulator records the launch as undefined behaviour
(``pygraphrt.sim.undefined_calls``) and fails it with ``cudaErrorIllegalAddress``.
"""

from __future__ import annotations

from typing import Any

from ..._bindings.cuda13 import ffi
from ._core import SimError, addr, enum
from ._rt_base import RuntimeBase

P2P = enum("enum cudaDeviceP2PAttr")
MEMORY_TYPE = enum("enum cudaMemoryType")
ACCESS = enum("enum cudaMemAccessFlags")
LOCATION = enum("enum cudaMemLocationType")
# cudaPointerGetAttributes' device for memory that belongs to no device
NO_DEVICE = -2


class PeerSection(RuntimeBase):
    """Several-device calls: peer access, peer-to-peer attributes, pointer attributes, pool
    access and a stream's device."""

    def _pair(self, d: int, peer: int, what: str) -> None:
        self._device(d)
        self._device(peer)
        if d == peer:
            # as CUDA 13.0 answered on a 2-GPU H200 machine (driver 580): a device enabling access
            # to itself is cudaErrorPeerAccessUnsupported, where the documentation implies
            # cudaErrorInvalidDevice (conformance deviation multidevice.peer.enable_self)
            raise SimError("PeerAccessUnsupported", f"{what}: device {d} and its peer are the same device")

    def cudaDeviceCanAccessPeer(self, out: Any, d: int, peer: int) -> None:
        self._device(d)
        self._device(peer)
        # a device is not its own peer: answered 0, not refused (as CUDA 13.0 does)
        out[0] = 1 if self.peer_capable and d != peer else 0

    def cudaDeviceEnablePeerAccess(self, peer: int, flags: int) -> None:
        if flags != 0:
            raise SimError("InvalidValue", f"cudaDeviceEnablePeerAccess: flags must be 0, got {flags}")
        d = self.thread.device
        self._pair(d, peer, "cudaDeviceEnablePeerAccess")
        if not self.peer_capable:
            # CUDA Runtime API, cudaDeviceEnablePeerAccess: "Returns cudaErrorInvalidDevice if
            # cudaDeviceCanAccessPeer() indicates that the current device cannot directly access
            # memory from peerDevice"
            raise SimError("InvalidDevice", f"cudaDeviceEnablePeerAccess: device {d} cannot access device "
                                            f"{peer}'s memory (the simulated machine has no peer access)")
        if (d, peer) in self.peer_pairs:
            raise SimError("PeerAccessAlreadyEnabled", f"device {d} has peer access to device {peer} already")
        self.peer_pairs.add((d, peer))

    def cudaDeviceDisablePeerAccess(self, peer: int) -> None:
        d = self.thread.device
        self._pair(d, peer, "cudaDeviceDisablePeerAccess")
        if (d, peer) not in self.peer_pairs:
            raise SimError("PeerAccessNotEnabled", f"device {d} has no peer access to device {peer} to disable")
        self.peer_pairs.discard((d, peer))

    def cudaDeviceGetP2PAttribute(self, out: Any, attr: int, d: int, peer: int) -> None:
        self._pair(d, peer, "cudaDeviceGetP2PAttribute")
        can = 1 if self.peer_capable else 0
        values = {P2P["cudaDevP2PAttrPerformanceRank"]: 0, P2P["cudaDevP2PAttrAccessSupported"]: can,
                  P2P["cudaDevP2PAttrNativeAtomicSupported"]: can, P2P["cudaDevP2PAttrCudaArrayAccessSupported"]: 0,
                  P2P["cudaDevP2PAttrOnlyPartialNativeAtomicSupported"]: 0}
        if attr not in values:
            raise SimError("InvalidValue", f"cudaDeviceGetP2PAttribute: {attr} is not a cudaDeviceP2PAttr")
        out[0] = values[attr]

    def cudaPointerGetAttributes(self, attrs: Any, ptr: Any) -> None:
        if attrs == ffi.NULL:
            raise SimError("InvalidValue", "cudaPointerGetAttributes: NULL output pointer")
        v = addr(ptr)
        block = self.memory.find(v) if self.memory.is_device(v) else None
        if self.memory.is_device(v) and block is None:
            raise SimError("InvalidValue", f"cudaPointerGetAttributes: {v:#x} is in no allocation of a "
                                           "simulated device")
        if block is None:  # host memory the runtime does not know (unified addressing)
            attrs.type = MEMORY_TYPE["cudaMemoryTypeUnregistered"]
            attrs.device = NO_DEVICE
            attrs.devicePointer = ffi.NULL
            attrs.hostPointer = ffi.cast("void *", v)
            return
        attrs.type = MEMORY_TYPE["cudaMemoryTypeDevice"]
        attrs.device = block.device
        attrs.devicePointer = ffi.cast("void *", v)
        attrs.hostPointer = ffi.NULL

    def _location(self, loc: Any, what: str) -> int:
        if int(loc.type) != LOCATION["cudaMemLocationTypeDevice"]:
            raise SimError("InvalidValue", f"{what}: only device locations are simulated")
        return self._device(int(loc.id))

    def cudaMemPoolSetAccess(self, pool: Any, descs: Any, n: int) -> None:
        p = self._pool(pool)
        if n and descs == ffi.NULL:
            raise SimError("InvalidValue", f"cudaMemPoolSetAccess: NULL array for {n} descriptors")
        changes = []
        for i in range(n):  # all checked before any applies
            d = self._location(descs[i].location, "cudaMemPoolSetAccess")
            flags = int(descs[i].flags)
            if flags not in ACCESS.values():
                raise SimError("InvalidValue", f"cudaMemPoolSetAccess: {flags} is not a cudaMemAccessFlags")
            if flags == ACCESS["cudaMemAccessFlagsProtRead"]:
                # as CUDA 13.0 answered on a 2-GPU H200 machine: read-only pool access is
                # cudaErrorNotSupported (conformance deviation multidevice.pool.set_access_read_only)
                raise SimError("NotSupported", "cudaMemPoolSetAccess: read-only access to a pool")
            if d == p.device and flags != ACCESS["cudaMemAccessFlagsProtReadWrite"]:
                raise SimError("InvalidDevice", f"cudaMemPoolSetAccess: the pool's own device {d} always "
                                                "reads and writes its memory")
            if d != p.device and not self.peer_capable and flags != ACCESS["cudaMemAccessFlagsProtNone"]:
                # (the simulator's choice, not seen on hardware: the same answer as enabling peer access)
                raise SimError("InvalidDevice", f"cudaMemPoolSetAccess: device {d} cannot access device "
                                                f"{p.device}'s memory (the simulated machine has no peer access)")
            changes.append((d, flags))
        for d, flags in changes:
            self.pool_access[(p.handle, d)] = flags

    def cudaMemPoolGetAccess(self, out: Any, pool: Any, loc: Any) -> None:
        p = self._pool(pool)
        d = self._location(loc, "cudaMemPoolGetAccess")
        if d == p.device:
            out[0] = ACCESS["cudaMemAccessFlagsProtReadWrite"]
        else:
            out[0] = self.pool_access.get((p.handle, d), ACCESS["cudaMemAccessFlagsProtNone"])

    # -- kernels touching memory -------------------------------------------------------------
    def _kernel_reach(self, device: int, address: int, what: str) -> None:
        """A kernel on ``device`` touches ``address``: another device's memory without access is an
        illegal-address fault on a GPU (the context is lost): undefined here, and the launch fails."""
        if not self.memory.is_device(address):
            return
        block = self.memory.find(address)
        if block is None or block.device == device or self._reaches(device, block):
            return
        how = {"graph": "its allocation node gives device {d} no access (accessDescs)",
               "async": "its pool gives device {d} no access (cudaMemPoolSetAccess)",
               "malloc": "device {d} has no peer access to it (cudaDeviceEnablePeerAccess)"}[block.kind]
        if not self.peer_capable:
            how = "the simulated machine has no peer access"
        raise SimError("IllegalAddress", f"{what} on device {device} touched {address:#x}, memory of device "
                                         f"{block.device}: " + how.format(d=device) + " (an illegal-address "
                                         "fault on a GPU, which poisons the context)", undefined=True)

    def cudaStreamGetDevice(self, stream: Any, out: Any) -> None:
        out[0] = self._stream(stream).device

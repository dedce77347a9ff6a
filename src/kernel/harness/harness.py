"""upskill's kernel harness: runs with the configured Python (isolated: python -I), one role per
process. docs/SECURITY.md ("The judge holds everything the verdict rests on") is its threat model.

  judge      (trusted)   holds the spec, the seeds, the clock and every copy the verdict is made
                         from. Talks to the candidate's process over a socket (fd 3) and to upskill
                         (fd 4: the candidate's CPU time, and reads of a worker's memory made from
                         outside every sandbox). Makes every input in its own memory, hands it over
                         in a sealed memfd the candidate can only read, has the outputs copied into
                         its own memory by the trusted side (upskill on the CPU, itself on CUDA),
                         and only then checks them against the reference it computes in its own
                         process. Times each segment of calls by its own clock, from the moment it
                         hands the inputs over to the moment it holds the outputs.
  worker     (candidate) sandboxed; loads the candidate package and calls it on what the judge
                         hands over, one request at a time, answering where the outputs are (CPU)
                         or writing them into the judge's memory (CUDA). Never sees the spec, the
                         seeds, the reference or the judge's clock.
  worker --reference     started by the judge: the same worker, calling the spec's reference, in a
                         process that never loads candidate code: the reference is timed by the
                         same protocol as the candidate.

The op's spec is a Python file that defines make_inputs(shape, dtype, device, generator),
reference(*inputs), call(kernel, *inputs), SHAPES and DTYPES, and optionally TOLERANCES
({dtype: (rtol, atol)}), BENCH_SHAPES, BENCH_DTYPE, bytes_moved(inputs, output), edge input
sets: EDGE_CASES [(name, shape, dtype)] with make_edge_inputs(name, shape, dtype, device,
generator), and the bounds of the shapes drawn at random per run: SHAPE_BOUNDS [(low, high) or
(low, high, step) per dimension], or DRAWN_SHAPES = 0 for none.
"""
import argparse
import ctypes
import fcntl
import hashlib
import importlib.util
import inspect
import json
import math
import mmap
import os
import random
import socket
import subprocess
import sys
import time
import traceback
import warnings

import torch

DEFAULT_TOLERANCES = {
    "float32": (1e-5, 1e-5),
    "float64": (1e-7, 1e-7),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
TRIALS = 2  # two independent input sets per case: a cached or replayed output fails the second
DRAWN_SHAPES = 2  # correctness shapes drawn per run from the seed, beside the listed ones
SETTLE_S = 1.5  # after the last correctness call: its outputs are asked for again, bit for bit
SEGMENTS = 5  # timed segments per bench shape and side, at least; the fastest is the time
MAX_SEGMENTS = 40  # more segments while they are short, up to SEGMENT_BUDGET_S in all
SEGMENT_S = 0.1  # about how long one segment of reference calls takes (sizes the segments)
SEGMENT_BUDGET_S = 0.6  # after SEGMENTS segments, more are timed only within this much time
MAX_CALLS = 1000  # calls in one segment, at most
# The judge's shared memory for one segment (inputs and outputs of its calls), at most: fewer calls
# a segment where a call's inputs and outputs are large, never fewer than two calls. The judge also
# holds a copy of the outputs, so a segment needs about 1.5x this (docs/kernel-checks.md).
SEGMENT_BYTES = {"cpu": 256 << 20, "cuda": 2 << 30}
# Written by the judge before every segment's clock starts, larger than the caches it clears.
FLUSH_BYTES = {"cpu": 64 << 20, "cuda": 256 << 20}
THREADS = 2  # the threads each side is given (OMP_NUM_THREADS); more CPU than this is flagged
ALIGN = 64  # every tensor placed in shared memory starts on a cache line
LINK_FD, METER_FD = 3, 4
MAX_MESSAGE = 1 << 20
F_SEAL_FUTURE_WRITE = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x0010)
_clock = time.perf_counter_ns
# The judge compares outputs CHUNK elements at a time: float64 copies of a whole large output
# would be fresh memory for every comparison, and on a CPU their page faults cost more than the
# arithmetic; a chunk's copies are reused.
CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------------
# The spec and the cases


def load_spec(path):
    spec = importlib.util.spec_from_file_location("upskill_op_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("make_inputs", "reference", "call", "SHAPES", "DTYPES"):
        if not hasattr(module, name):
            raise SystemExit(f"{path}: the spec defines no {name}")
    return module


def cases_of(spec, seed):
    """Every correctness case as (shape, dtype, input set name or None, drawn): the listed shapes
    in every dtype, the edge input sets, and shapes drawn for this run from the seed (which the
    candidate never sees), so that a kernel right only for the listed shapes fails."""
    cases = [(tuple(shape), dtype, None, False) for shape in spec.SHAPES for dtype in spec.DTYPES]
    edges = getattr(spec, "EDGE_CASES", None) or []
    if edges and not hasattr(spec, "make_edge_inputs"):
        raise SystemExit("the spec defines EDGE_CASES but no make_edge_inputs")
    for name, shape, dtype in edges:
        cases.append((tuple(shape), dtype, str(name), False))
    for shape, dtype in drawn_shapes(spec, seed):
        cases.append((shape, dtype, None, True))
    return cases


def drawn_shapes(spec, seed):
    """DRAWN_SHAPES (shape, dtype) pairs, none of them listed. Each dimension is drawn within the
    spec's SHAPE_BOUNDS, or else between the smallest and largest value that dimension has among
    the listed shapes of the same rank, in steps of their greatest common divisor (even sizes
    where every listed one is even, as a rotary head or a gated pair needs; any size where the
    listed ones are ragged). No larger than the largest listed shape."""
    count = int(getattr(spec, "DRAWN_SHAPES", DRAWN_SHAPES))
    listed = [tuple(s) for s in spec.SHAPES]
    if count <= 0 or not listed:
        return []
    rng = random.Random(seed * 7907 + 17)
    bounds = getattr(spec, "SHAPE_BOUNDS", None)
    largest = max(math.prod(s) for s in listed)

    def pick(low, high, step=1):
        low = -(-low // step) * step
        return low if high <= low else rng.randrange(low, high + 1, step)

    out = []
    for _ in range(count):
        for _ in range(50):
            if bounds:
                shape = tuple(pick(*map(int, b)) for b in bounds)
            else:
                base = rng.choice(listed)
                peers = [s for s in listed if len(s) == len(base)]
                dims = []
                for d in range(len(base)):
                    values = [s[d] for s in peers]
                    dims.append(pick(min(values), max(values), math.gcd(*values)))
                shape = tuple(dims)
            if shape not in listed and (bounds or math.prod(shape) <= largest):
                out.append((shape, rng.choice(list(spec.DTYPES))))
                break
    return out


def bench_cases_of(spec):
    shapes = getattr(spec, "BENCH_SHAPES", None) or [max(spec.SHAPES, key=lambda s: math.prod(s))]
    dtype = getattr(spec, "BENCH_DTYPE", spec.DTYPES[0])
    return [(tuple(shape), dtype) for shape in shapes]


def make(spec, seed, index, trial, shape, dtype, device, edge=None):
    generator = torch.Generator().manual_seed((seed * 1009 + index * 31 + trial) % (2**63))
    if edge is None:
        inputs = spec.make_inputs(shape, getattr(torch, dtype), "cpu", generator)
    else:
        inputs = spec.make_edge_inputs(edge, shape, getattr(torch, dtype), "cpu", generator)
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def fresh_inputs(spec, shape, dtype):
    """Inputs of a timed call from a seed drawn now from the system's randomness, which exists in
    the judge's process only: nothing of them can be known before they are handed over."""
    seed = int.from_bytes(os.urandom(8), "little") >> 1
    generator = torch.Generator().manual_seed(seed)
    return list(spec.make_inputs(shape, getattr(torch, dtype), "cpu", generator))


def as_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------------
# Values in shared memory: a layout says where each tensor of a list of values lies (offset,
# shape, strides, dtype) or what each other value is; both sides build their tensors over the same
# bytes from it.

DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def aligned(n):
    return -(-n // ALIGN) * ALIGN


def span_of(shape, stride):
    """Elements between a tensor's first and last element, inclusive (0 when it has none)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(shape, stride))


def encode_value(v):
    """A non-tensor input as JSON: numbers (infinities and NaN by name), bools, None, strings
    and lists of them."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return {"list": [encode_value(x) for x in v], "tuple": isinstance(v, tuple)}
    if isinstance(v, torch.dtype):
        return {"dtype": dtype_name(v)}
    raise TypeError(f"an input of type {type(v).__name__} cannot be handed to another process")


def decode_value(v):
    if isinstance(v, dict):
        if "float" in v:
            return float(v["float"])
        if "dtype" in v:
            return DTYPES[v["dtype"]]
        items = [decode_value(x) for x in v["list"]]
        return tuple(items) if v.get("tuple") else items
    return v


def layout_of(values):
    """(layout, bytes): where each value goes in one call's share of shared memory."""
    layout, offset = [], 0
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.dtype not in DTYPES.values():
                raise TypeError(f"tensors of {v.dtype} cannot be handed over")
            shape, stride = list(v.shape), list(v.stride())
            if any(s < 0 for s in stride):
                raise TypeError("a tensor with negative strides cannot be handed over")
            nbytes = span_of(shape, stride) * v.element_size()
            layout.append({"tensor": [offset, shape, stride, dtype_name(v.dtype)]})
            offset = aligned(offset + nbytes)
        else:
            layout.append({"value": encode_value(v)})
    return layout, max(offset, ALIGN)


def outputs_layout(outputs):
    """The layout of contiguous slots for outputs like these (the reference's)."""
    slots = [torch.empty(o.shape, dtype=o.dtype) if isinstance(o, torch.Tensor) else o
             for o in outputs]
    return layout_of(slots)


def place(layout, buffer, base, device="cpu"):
    """The values of a layout over `buffer` (a 1-D uint8 tensor) from byte `base`: tensors are
    views of its bytes, other values decoded."""
    out = []
    for entry in layout:
        if "value" in entry:
            out.append(decode_value(entry["value"]))
            continue
        offset, shape, stride, dtype = entry["tensor"]
        dtype = DTYPES[dtype]
        count = span_of(shape, stride)
        if count == 0:
            out.append(torch.empty(shape, dtype=dtype, device=device))
            continue
        size = torch.empty((), dtype=dtype).element_size()
        start = base + offset
        flat = buffer[start:start + count * size].view(dtype)
        out.append(flat.as_strided(shape, stride))
    return out


def write_values(layout, buffer, base, values):
    """Writes each tensor of `values` into its place in `buffer` as its layout says: the span of
    memory it covers, gaps and repeated elements (an expanded tensor) as they are."""
    for entry, v in zip(layout, values):
        if "tensor" not in entry or not isinstance(v, torch.Tensor):
            continue
        offset, shape, stride, dtype = entry["tensor"]
        count = span_of(shape, stride)
        if count == 0:
            continue
        size = v.element_size()
        start = base + offset
        span = torch.as_strided(v.detach(), (count,), (1,), v.storage_offset())
        buffer[start:start + count * size].view(v.dtype).copy_(span)


def check_layout(layout, size):
    """Whether a layout received from the judge fits its buffer (the worker trusts the judge, but
    a wrong layout must fail in words, not read out of bounds)."""
    for entry in layout:
        if "tensor" in entry:
            offset, shape, stride, dtype = entry["tensor"]
            item = torch.empty((), dtype=DTYPES[dtype]).element_size()
            if (offset < 0 or offset % item or any(n < 0 for n in shape)
                    or any(st < 0 for st in stride) or len(shape) != len(stride)
                    or offset + span_of(shape, stride) * item > size):
                raise ValueError("a layout that does not fit its memory")


class Region:
    """Shared memory the judge makes (a sealed memfd): it cannot grow or shrink, so no process can
    make the judge's mapping fault; with `read_only`, once sealed no process can write it any more
    — not through a new mapping, not through write(2), not by reopening /proc/self/fd — and the
    judge's own mapping is the only writable one. Handed over as a file descriptor at the moment
    the judge chooses; nothing else names it."""

    def __init__(self, size, name):
        self.size = max(int(size), ALIGN)
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size)
        self.bytes = torch.frombuffer(self.map, dtype=torch.uint8)

    def seal(self, read_only):
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        if read_only:
            seals |= F_SEAL_FUTURE_WRITE
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, seals)

    def close(self):
        self.bytes = None
        try:
            self.map.close()
        except BufferError:  # a view is still alive somewhere; the mapping goes with it
            pass
        os.close(self.fd)


def map_received(fd, size, writable):
    """A region the judge handed over, mapped: read-only unless `writable`, its pages mapped now
    (MAP_POPULATE) rather than faulted in one at a time by the first call."""
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    m = mmap.mmap(fd, size, flags=flags, prot=prot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that a read-only buffer is read-only
        return m, torch.frombuffer(m, dtype=torch.uint8)


# ---------------------------------------------------------------------------------------------
# Device memory the judge owns on CUDA: allocated with the driver's virtual memory management and
# exported as a file descriptor (cuMemCreate with a POSIX fd handle), so it can be handed over
# like a memfd — the candidate has no handle on it before — and the judge's copy of the outputs is
# taken on the device by the judge itself.

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUmemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class CUmemAllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class CUmemAllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", CUmemLocation), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", CUmemAllocFlags)]


class CUmemAccessDesc(ctypes.Structure):
    _fields_ = [("location", CUmemLocation), ("flags", ctypes.c_int)]


CUDA_DRIVER_FUNCTIONS = {
    "cuMemGetAllocationGranularity": [ctypes.POINTER(ctypes.c_size_t),
                                      ctypes.POINTER(CUmemAllocationProp), ctypes.c_int],
    "cuMemCreate": [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t,
                    ctypes.POINTER(CUmemAllocationProp), ctypes.c_ulonglong],
    "cuMemAddressReserve": [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t, ctypes.c_size_t,
                            ctypes.c_ulonglong, ctypes.c_ulonglong],
    "cuMemMap": [ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_ulonglong,
                 ctypes.c_ulonglong],
    "cuMemSetAccess": [ctypes.c_ulonglong, ctypes.c_size_t, ctypes.POINTER(CUmemAccessDesc),
                       ctypes.c_size_t],
    "cuMemExportToShareableHandle": [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_int,
                                     ctypes.c_ulonglong],
    "cuMemImportFromShareableHandle": [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p,
                                       ctypes.c_int],
    "cuMemUnmap": [ctypes.c_ulonglong, ctypes.c_size_t],
    "cuMemAddressFree": [ctypes.c_ulonglong, ctypes.c_size_t],
    "cuMemRelease": [ctypes.c_ulonglong],
}


class CudaDriver:
    def __init__(self, path="libcuda.so.1"):
        self.lib = ctypes.CDLL(path)
        for name, argtypes in CUDA_DRIVER_FUNCTIONS.items():
            fn = getattr(self.lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int

    def __call__(self, name, *args):
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise RuntimeError(f"{name} failed: CUDA driver error {rc}")


class _CudaArray:
    """Device bytes as __cuda_array_interface__, for torch.as_tensor to view without a copy."""

    def __init__(self, pointer, size):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1",
                                         "data": (pointer, False), "version": 2}


class DeviceRegion:
    """Device memory shared by file descriptor: made by the judge (`fd=None`) or imported from the
    judge's descriptor by a worker."""
    _driver = None

    def __init__(self, size, fd=None):
        if DeviceRegion._driver is None:
            DeviceRegion._driver = CudaDriver()
        cu = DeviceRegion._driver
        torch.cuda.init()
        device = torch.cuda.current_device()
        prop = CUmemAllocationProp()
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device
        granularity = ctypes.c_size_t()
        cu("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), 0)
        g = granularity.value
        self.size = -(-max(int(size), 1) // g) * g
        self.handle = ctypes.c_ulonglong()
        if fd is None:
            cu("cuMemCreate", ctypes.byref(self.handle), self.size, ctypes.byref(prop), 0)
            exported = ctypes.c_int(-1)
            cu("cuMemExportToShareableHandle", ctypes.byref(exported), self.handle,
               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
            self.fd = exported.value
        else:
            cu("cuMemImportFromShareableHandle", ctypes.byref(self.handle), ctypes.c_void_p(fd),
               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            self.fd = None
        self.pointer = ctypes.c_ulonglong()
        cu("cuMemAddressReserve", ctypes.byref(self.pointer), self.size, 0, 0, 0)
        cu("cuMemMap", self.pointer, self.size, 0, self.handle, 0)
        access = CUmemAccessDesc()
        access.location.type = CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = device
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        cu("cuMemSetAccess", self.pointer, self.size, ctypes.byref(access), 1)
        self.bytes = torch.as_tensor(_CudaArray(self.pointer.value, self.size), device="cuda")

    def close(self):
        torch.cuda.synchronize()
        self.bytes = None
        cu = DeviceRegion._driver
        cu("cuMemUnmap", self.pointer, self.size)
        cu("cuMemAddressFree", self.pointer, self.size)
        cu("cuMemRelease", self.handle)
        if self.fd is not None:
            os.close(self.fd)


# ---------------------------------------------------------------------------------------------
# The link between the judge and a worker: a socket of messages (SOCK_SEQPACKET), each a JSON
# object, file descriptors beside it. Every request carries a number the judge draws; a reply
# that does not carry it was not asked for.


class Lost(Exception):
    """The candidate's process stopped answering as the protocol says: it died, ran past its
    time, or sent what was not asked for."""


class Link:
    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)

    def send(self, message, fds=()):
        data = json.dumps(message).encode()
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.send(data)

    def recv(self, timeout=None):
        """(message, received descriptors); EOFError when the other side is gone,
        socket.timeout when `timeout` seconds pass first."""
        self.sock.settimeout(timeout)
        data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 8)
        if not data:
            for fd in fds:
                os.close(fd)
            raise EOFError
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise ValueError("a message longer than the protocol allows")
        return json.loads(data), fds


class Peer:
    """The judge's side of a link to a worker: requests answered in turn, within the time the
    worker has left (`budget`: all its waits together)."""

    def __init__(self, link, name, budget_s):
        self.link, self.name = link, name
        self.left = budget_s
        self.budget = budget_s

    def send(self, message, fds=()):
        self.nonce = int.from_bytes(os.urandom(8), "little")
        message = dict(message, nonce=self.nonce)
        try:
            self.link.send(message, fds)
        except OSError as e:
            raise Lost(f"its process stopped ({e.strerror or e})") from None

    def receive(self, expect_nonce=True):
        start = time.monotonic()
        try:
            message, fds = self.link.recv(max(self.left, 0.001))
        except socket.timeout:
            raise Lost(f"ran past {self.budget:g} s") from None
        except (EOFError, ConnectionError):
            raise Lost("its process stopped") from None
        except (ValueError, RecursionError):
            raise Lost("it sent the judge something that is not the harness's message") from None
        finally:
            self.left -= time.monotonic() - start
        for fd in fds:  # the judge takes no descriptors from a worker
            os.close(fd)
        if not isinstance(message, dict) or (expect_nonce and message.get("nonce") != self.nonce):
            raise Lost("it answered out of turn (a message the judge did not ask for)")
        return message

    def request(self, message, fds=()):
        self.send(message, fds)
        return self.receive()


class Service:
    """What upskill does for the judge from outside every sandbox (fd 4; the protocol is in
    src/kernel/judge_service.hpp): the candidate's CPU time (all its processes, by the kernel's
    accounting), and reads of a worker's memory into the judge's snapshot — process_vm_readv(2),
    the kernel copying the worker's memory as it is at that moment, with no step of the worker's
    own. A read that does not finish in the time the worker has left ends the check as the
    worker's ("lost"), and nothing more is asked of upskill after it."""

    NOT_ALLOWED = ("this machine does not let upskill read another process's memory (ptrace "
                   "rules or a seccomp profile), which timing on the CPU needs")

    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        self.broken = False

    def answer(self, timeout=None):
        self.sock.settimeout(timeout)
        data = b""
        while len(data) < 8:
            chunk = self.sock.recv(8 - len(data))
            if not chunk:
                raise OSError("upskill closed the service")
            data += chunk
        return int.from_bytes(data, "little")

    def read(self):
        """The candidate's CPU time in ns, or None when it could not be read."""
        if self.broken:
            return None
        try:
            self.sock.sendall(b"C")
            value = self.answer()
        except OSError:
            return None
        return None if value == (1 << 64) - 1 else value

    def find(self, who):
        """Has upskill find and pin a worker (asked before it loads any candidate code)."""
        self.sock.sendall(b"W" + who.encode())
        answer = self.answer()
        if answer == 5:
            raise SystemExit(self.NOT_ALLOWED)
        if answer != 0:
            raise SystemExit(f"upskill could not find the {'candidate' if who == 'c' else 'reference'}"
                             f" worker's process")

    def map(self, region):
        """Hands the snapshot region over (sealed against shrinking): later reads land in it."""
        socket.send_fds(self.sock, [b"M"], [region.fd])
        self.sock.sendall(region.size.to_bytes(8, "little"))
        if self.answer() != 0:
            raise SystemExit("upskill could not map the judge's snapshot memory")

    def pull(self, who, ranges, peer):
        """Copies each (address in the worker, length, offset in the snapshot) range of the
        worker's memory into the snapshot, within the time `peer` has left: 0 when done, 2 when a
        range could not be read, 3 when the worker is gone. Raises Lost when the time runs out."""
        head = b"R" + who.encode() + len(ranges).to_bytes(4, "little")
        body = b"".join(a.to_bytes(8, "little") + n.to_bytes(8, "little") +
                        o.to_bytes(8, "little") for a, n, o in ranges)
        self.sock.sendall(head + body)
        start = time.monotonic()
        try:
            answer = self.answer(max(peer.left, 0.001))
        except socket.timeout:
            self.broken = True  # its answer may still come: nothing more is asked
            raise Lost(f"ran past {peer.budget:g} s (its outputs could not be read in time)") \
                from None
        finally:
            peer.left -= time.monotonic() - start
        if answer == 4:
            raise SystemExit("the judge asked upskill for a read it refused (a harness bug)")
        if answer == 5:
            raise SystemExit(self.NOT_ALLOWED)
        return answer


class ChildMeter:
    """A child process's CPU time (all its threads) by the kernel's accounting: its CPU clock."""

    def __init__(self, pid):
        self.clock = None
        libc = ctypes.CDLL(None, use_errno=True)
        clock = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
            self.clock = clock.value

    def read(self):
        if self.clock is None:
            return None
        try:
            return time.clock_gettime_ns(self.clock)
        except OSError:
            return None


# ---------------------------------------------------------------------------------------------
# Comparing outputs with the reference


def flat_chunks(*tensors):
    """(offset, [float64 copy of each tensor's elements from offset]), CHUNK elements at a time."""
    flat = [t.reshape(-1) for t in tensors]
    for start in range(0, flat[0].numel(), CHUNK):
        yield start, [f[start:start + CHUNK].double() for f in flat]


def unravel(index, shape):
    """The coordinates (row-major) of a flat index, as nonzero() lists them."""
    at = []
    for size in reversed(tuple(shape)):
        at.append(index % size)
        index //= size
    return at[::-1]


def element(t, index):
    return float(t.reshape(-1)[index].double())


def clearly_within(g, e, rtol, atol):
    """A fast first look: every element of a floating-point output within 0.99 of its tolerance
    by float32 arithmetic (exact for float16 and bfloat16 differences, within 1e-7 relative for
    float32), and finite where the reference is. Anything less is decided by judge_values' float64
    comparison; this only spares it the outputs that are plainly right."""
    if not g.is_floating_point() or g.dtype == torch.float64 or g.numel() == 0:
        return False
    g32 = g.reshape(-1).float()
    e32 = e.reshape(-1).float()
    if not bool(torch.isfinite(e32).all()) or not bool(torch.isfinite(g32).all()):
        return False
    limit = e32.abs().mul_(rtol * 0.99).add_(atol * 0.99)
    return bool(((g32 - e32).abs_() <= limit).all())


def judge_values(got, expected, rtol, atol):
    if not isinstance(got, list) or len(got) != len(expected):
        return {"problem": f"returned {len(got) if isinstance(got, list) else 'no'} outputs, "
                           f"expected {len(expected)}"}
    worst = 0.0
    for k, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, torch.Tensor):
            return {"problem": f"output {k} is not a tensor"}
        if tuple(g.shape) != tuple(e.shape):
            return {"problem": f"output {k} has shape {tuple(g.shape)}, expected {tuple(e.shape)}"}
        if g.dtype != e.dtype:
            return {"problem": f"output {k} has dtype {g.dtype}, expected {e.dtype}"}
        # Element by element in float64: first the elements that are not what the reference's
        # are in kind (NaN/Inf where the reference is finite; where it is NaN or infinite,
        # anything but the same NaN or the same infinity), then the rest by
        # |got - expected| > atol + rtol * |expected|.
        bad_count, bad_at, over_count, over_at, maxima = 0, None, 0, None, []
        for start, (g64, e64) in flat_chunks(g, e):
            finite = torch.isfinite(e64)
            same = (g64 == e64) | (torch.isnan(g64) & torch.isnan(e64))
            bad = torch.where(finite, ~torch.isfinite(g64), ~same)
            n = int(bad.sum())
            if n and bad_at is None:
                bad_at = start + int(bad.nonzero()[0])
            bad_count += n
            if bad_count:
                continue
            diff = (g64 - e64).abs_().masked_fill_(~finite, 0.0)
            over = diff > e64.abs_().mul_(rtol).add_(atol)
            maxima.append(diff.max())
            n = int(over.sum())
            if n and over_at is None:
                over_at = start + int(over.nonzero()[0])
            over_count += n
        if bad_count:
            return {"problem": f"output {k} has NaN/Inf at {unravel(bad_at, g.shape)} "
                               f"({bad_count} elements; where the reference is NaN or infinite, "
                               f"only the same value passes)"}
        top = float(torch.stack(maxima).max()) if maxima else 0.0  # NaN when any difference is
        worst = max(worst, top)
        if over_count:
            return {"problem": degenerate(g) +
                               f"output {k} differs at {unravel(over_at, g.shape)}: got "
                               f"{element(g, over_at):.6g}, expected {element(e, over_at):.6g} "
                               f"({over_count} of {g.numel()} elements out of tolerance)",
                    "max_abs_error": top}
    return {"passed": True, "max_abs_error": worst}


def audit_values(got, expected, rtol, atol):
    """judge_values, with the fast look first for outputs that are plainly right."""
    if (isinstance(got, list) and len(got) == len(expected)
            and all(isinstance(g, torch.Tensor) and g.shape == e.shape and g.dtype == e.dtype
                    and clearly_within(g, e, rtol, atol) for g, e in zip(got, expected))):
        return {"passed": True}
    return judge_values(got, expected, rtol, atol)


def degenerate(g):
    """'all-zero output: ' or 'constant output: ' for outputs that ignore their inputs."""
    if g.numel() > 1:
        if all(bool((c == 0).all()) for _, (c,) in flat_chunks(g)):
            return "all-zero output: "
        first = element(g, 0)
        if all(bool((c == first).all()) for _, (c,) in flat_chunks(g)):
            return "constant output: "
    return ""


def discriminates(expected, rtol, atol):
    """Would an all-zero or a constant output (the mean of the finite expected values) fail this
    case? If not, the case proves nothing."""
    for e in expected:
        total, count, zero_fails = 0.0, 0, False
        for _, (e64,) in flat_chunks(e):
            finite = torch.isfinite(e64)
            total += float(e64[finite].sum())
            count += int(finite.sum())
            magnitude = e64.abs()
            zero_fails = zero_fails or bool((magnitude > magnitude * rtol + atol).any())
        if count == 0:
            continue
        mean = total / count
        constant_fails = any(bool(((e64 - mean).abs_() > e64.abs().mul_(rtol).add_(atol)).any())
                             for _, (e64,) in flat_chunks(e))
        if zero_fails and constant_fails:
            return True
    return False


def identical(a, b):
    """Two tensors equal bit for bit, NaN where NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                 and torch.equal(a.nan_to_num(), b.nan_to_num()))


def fingerprint(values):
    """A SHA-256 of outputs' bytes, shapes and dtypes: the judge keeps this of each correctness
    call's outputs, not the outputs, to tell whether they changed later or repeat."""
    h = hashlib.sha256()
    for v in values:
        if isinstance(v, torch.Tensor):
            h.update(repr((tuple(v.shape), dtype_name(v.dtype))).encode())
            h.update(v.detach().to("cpu").contiguous().view(-1).view(torch.uint8).numpy()
                     .tobytes() if v.numel() else b"")
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# The worker: the candidate's process (or the reference's). Everything it is given comes from
# the judge; what it sends back is its outputs in the judge's memory and words about errors.


class AccessLog:
    """Paths the candidate's Python code tried to open or list (an audit hook), re-tried after
    the run to report which ones the sandbox denied. Only Python-level accesses are seen."""

    def __init__(self, limit=200):
        self.paths = []
        self.limit = limit
        sys.addaudithook(self.hook)

    def hook(self, event, args):
        if event in ("open", "os.listdir", "os.scandir") and args and len(self.paths) < self.limit:
            path = args[0]
            if isinstance(path, (str, bytes)) and path:
                self.paths.append(os.fsdecode(path))

    def denied(self):
        out = []
        for path in dict.fromkeys(self.paths):
            try:
                if os.path.isdir(path):
                    os.listdir(path)
                else:
                    with open(path, "rb"):
                        pass
            except PermissionError:
                out.append(path)
            except OSError:
                pass
        return out[:50]


def outputs_mismatch(result, layout):
    """The first way a call's outputs differ in kind from the layout's slots, in words, or
    None."""
    if len(result) != len(layout):
        return f"returned {len(result)} outputs, expected {len(layout)}"
    for k, (r, entry) in enumerate(zip(result, layout)):
        if "tensor" not in entry:
            continue
        _, shape, _, dtype = entry["tensor"]
        if not isinstance(r, torch.Tensor):
            return f"output {k} is not a tensor"
        if list(r.shape) != list(shape):
            return f"output {k} has shape {tuple(r.shape)}, expected {tuple(shape)}"
        if dtype_name(r.dtype) != dtype:
            return f"output {k} has dtype {r.dtype}, expected {DTYPES[dtype]}"
        if r.device.type != "cpu":
            return f"output {k} is on {r.device}, not the CPU"
    return None


def write_outputs(result, slots):
    """Copies a call's outputs into the judge's slots; the first mismatch in words (the judge
    decides on the bytes it finds all the same), or None."""
    if len(result) != len(slots):
        return f"returned {len(result)} outputs, expected {len(slots)}"
    for k, (r, s) in enumerate(zip(result, slots)):
        if not isinstance(s, torch.Tensor):
            continue
        if not isinstance(r, torch.Tensor):
            return f"output {k} is not a tensor"
        if tuple(r.shape) != tuple(s.shape):
            return f"output {k} has shape {tuple(r.shape)}, expected {tuple(s.shape)}"
        if r.dtype != s.dtype:
            return f"output {k} has dtype {r.dtype}, expected {s.dtype}"
        s.copy_(r)
    return None


class Worker:
    def __init__(self, args):
        self.args = args
        self.device = args.device
        self.fn = None
        self.kept = {}  # correctness outputs, live, by call id: asked for again to settle
        self.templates = {}
        self.spec = None
        self.log = None if args.reference else AccessLog()

    def load(self, message):
        if self.args.reference:
            self.spec = load_spec(self.args.spec)
            self.fn = self.spec.reference
            return {"loaded": True}
        namespace = {}
        exec(compile(message["call"], "call.py", "exec"), namespace)
        call = namespace["call"]
        sys.path.insert(0, self.args.package)
        try:
            kernel = importlib.import_module(self.args.name)
        except BaseException as e:
            return {"import_error": "".join(traceback.format_exception_only(type(e), e)).strip()}
        self.fn = lambda *a: call(kernel, *a)
        return {"loaded": True}

    def function(self, message):
        which = message.get("fn", "call")
        if which == "noop":
            key = json.dumps(message["outputs"])
            if key not in self.templates:
                out = place(message["outputs"], torch.zeros(message["out_stride"],
                                                             dtype=torch.uint8), 0, self.device)
                self.templates[key] = [o.clone().to(self.device) if isinstance(o, torch.Tensor)
                                       else o for o in out]
            template = self.templates[key]
            return lambda *a: template
        if which == "compiled":
            if not hasattr(self, "compiled"):
                self.compiled = torch.compile(self.spec.reference)
            return self.compiled
        return self.fn

    def call(self, message, fds):
        """One correctness call: inputs from the judge's read-only region, outputs into its
        writable one."""
        size_in, size_out = message["in_size"], message["out_size"]
        check_layout(message["inputs"], size_in)
        check_layout(message["outputs"], size_out)
        in_map, in_bytes = map_received(fds[0], size_in, writable=False)
        out_map, out_bytes = map_received(fds[1], size_out, writable=True)
        inputs = place(message["inputs"], in_bytes, 0)
        slots = place(message["outputs"], out_bytes, 0)
        if "after" in message:
            # The judge asks for the inputs back (on a device, which cannot hold them read-only):
            # the call gets a copy of its own, on the device.
            inputs = [x.to(self.device, copy=True) if isinstance(x, torch.Tensor) else x
                      for x in inputs]
        if self.device.startswith("cuda"):
            # Poison the caching allocator: memory the kernel forgets to write reads as NaN.
            poison = torch.full((64 * 1024 * 1024,), float("nan"), device=self.device)
            del poison
        reply = {}
        try:
            result = as_list(self.fn(*inputs))
            sync(self.device)
            mismatch = write_outputs(result, slots)
            if mismatch:
                reply["mismatch"] = mismatch
            elif message.get("keep") is not None:
                self.kept[message["keep"]] = result
            if "after" in message:  # on a device: the inputs as the call left them, for the judge
                check_layout(message["after"], message["after_size"])
                after = place(message["after"], map_received(fds[2], message["after_size"],
                                                             writable=True)[1], 0)
                write_outputs([x for x in inputs if isinstance(x, torch.Tensor)],
                              [a for a in after if isinstance(a, torch.Tensor)])
                del after
        except Exception as e:  # the candidate's failure is a finding, not a harness crash
            reply["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
        # The mappings go when the last view of them does (never unmapped under a tensor the
        # candidate kept, which would make its next use of it crash somewhere else).
        del inputs, slots, in_bytes, out_bytes, in_map, out_map
        return reply

    def bind(self, message, fds):
        """The shared memory of one bench shape, mapped once: the inputs region read-only (the
        judge sealed it; only its own mapping writes it), each call's inputs viewed in place.
        With `pull` (the CPU) the outputs stay in this process's memory, where upskill reads
        them; otherwise (CUDA) they are copied into the judge's outputs region."""
        n = message["calls"]
        in_stride, out_stride = message["in_stride"], message["out_stride"]
        check_layout(message["inputs"], in_stride)
        check_layout(message["outputs"], out_stride)
        pull = message.get("pull")
        if self.device.startswith("cuda"):
            regions = (DeviceRegion(n * in_stride, fd=fds[0]),
                       DeviceRegion(n * out_stride, fd=fds[1]))
            in_bytes, out_bytes = regions[0].bytes, regions[1].bytes
        else:  # mmaps, unmapped when their last view goes
            in_bytes = map_received(fds[0], n * in_stride, writable=False)[1]
            out_bytes = None if pull else map_received(fds[1], n * out_stride, writable=True)[1]
            regions = ()
        calls = [(place(message["inputs"], in_bytes, i * in_stride, self.device),
                  None if pull else place(message["outputs"], out_bytes, i * out_stride,
                                          self.device))
                 for i in range(n)]
        self.bound = {"regions": regions, "calls": calls, "message": message, "pull": pull}
        return {}

    def unbind(self):
        self.held = None
        bound, self.bound = getattr(self, "bound", None), None
        if bound:
            bound["calls"] = None
            for region in bound["regions"]:
                region.close()
        return {}

    def segment(self, message):
        """The bound calls the judge names (`calls`: on the CPU one at a time, each asked for
        once the last one's outputs are the judge's; on CUDA all of a segment's), back to back.
        The judge wrote their inputs after its clock started and has the outputs copied before it
        stops: with `pull`, this answers where each call's outputs are in this process's memory
        (kept alive until the next request); otherwise each is written into the judge's outputs
        region."""
        bound = self.bound
        fn = self.function(dict(bound["message"], fn=message.get("fn", "call")))
        reply = {}
        self.held = None  # the last request's outputs
        held, where = [], []
        calls = bound["calls"]
        named = message.get("calls")
        if named is not None:
            calls = [calls[i] for i in named]
        try:
            for inputs, slots in calls:
                result = as_list(fn(*inputs))
                if bound["pull"]:
                    mismatch = outputs_mismatch(result, bound["message"]["outputs"])
                    if not mismatch:
                        # Its own memory, in order, its values resolved (a lazily conjugated or
                        # negated view holds other bytes than it reads as).
                        result = [r.resolve_conj().resolve_neg().contiguous()
                                  if isinstance(r, torch.Tensor) else r for r in result]
                        held.append(result)
                        where.append([[r.data_ptr(), r.numel() * r.element_size()]
                                      for r in result if isinstance(r, torch.Tensor)])
                else:
                    mismatch = write_outputs(result, slots)
                if mismatch:
                    reply["mismatch"] = mismatch
                    break
            sync(self.device)
        except Exception as e:
            reply["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
        if bound["pull"] and not reply:
            self.held = held
            reply["outputs"] = where
        return reply

    def settle(self, message, fds):
        """A correctness call's outputs as they are now, into the judge's memory."""
        kept = self.kept.get(message["id"])
        if kept is None:
            return {"missing": True}
        out_map, out_bytes = map_received(fds[0], message["out_size"], writable=True)
        slots = place(message["outputs"], out_bytes, 0)
        sync(self.device)
        mismatch = write_outputs(kept, slots)
        del slots, out_bytes, out_map
        return {"mismatch": mismatch} if mismatch else {}

    def finish(self, message):
        reply = {"denied": self.log.denied() if self.log else []}
        return reply

    def serve(self):
        link = Link(self.args.link)
        link.send({"ready": True})
        ops = {"load": lambda m, f: self.load(m), "call": self.call, "bind": self.bind,
               "unbind": lambda m, f: self.unbind(), "segment": lambda m, f: self.segment(m),
               "settle": self.settle, "exit": lambda m, f: self.finish(m)}
        while True:
            try:
                message, fds = link.recv()
            except EOFError:
                return
            try:
                reply = ops[message["op"]](message, fds)
            except Exception as e:
                reply = {"error": "the harness could not serve the request: "
                                  + "".join(traceback.format_exception_only(type(e), e)).strip()}
            finally:
                for fd in fds:
                    os.close(fd)
            reply["nonce"] = message.get("nonce")
            link.send(reply)
            if message["op"] == "exit":
                return


def worker(args):
    Worker(args).serve()


# ---------------------------------------------------------------------------------------------
# The judge


class Judge:
    def __init__(self, args):
        self.args = args
        self.device = args.device
        self.cuda = self.device.startswith("cuda")
        self.spec = load_spec(args.spec)
        self.tolerances = dict(DEFAULT_TOLERANCES)
        self.tolerances.update(getattr(self.spec, "TOLERANCES", {}))
        self.verdict = {"cases": [], "passed": True, "weak_cases": []}
        self.at = {"stage": "start"}  # what the judge was doing with the candidate, for `lost`
        self.candidate = Peer(Link(args.link), "candidate", args.timeout)
        self.service = Service(args.service) if args.service >= 0 else None
        self.fingerprints = {}
        self.last_call = None
        self.flush = torch.empty(FLUSH_BYTES["cuda" if self.cuda else "cpu"], dtype=torch.uint8,
                                 device=self.device)

    # -- the reference worker: a process of the judge's own that never loads candidate code --

    def start_reference(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-I", "-B", os.path.abspath(__file__), "worker", "--reference",
                "--spec", self.args.spec, "--device", self.device, "--link",
                str(theirs.fileno())]
        self.reference_process = subprocess.Popen(argv, pass_fds=[theirs.fileno()])
        theirs.close()
        self.reference = Peer(Link(mine.detach()), "reference", 600)
        self.reference_meter = ChildMeter(self.reference_process.pid)
        if not self.reference.receive(expect_nonce=False).get("ready"):
            raise SystemExit("the reference worker did not start")
        if self.pulls():
            self.service.find("r")
        loaded = self.reference.request({"op": "load"})
        if not loaded.get("loaded"):
            raise SystemExit(f"the reference worker could not load the spec: {loaded}")

    def stop_reference(self):
        try:
            self.reference.request({"op": "exit"})
        except Lost:
            pass
        self.reference_process.wait()

    # -- correctness --

    def correctness(self):
        spec, args = self.spec, self.args
        case_id = 0
        for index, (shape, dtype, edge, drawn) in enumerate(cases_of(spec, args.seed)):
            rtol, atol = self.tolerances.get(dtype, (1e-5, 1e-5))
            outputs = []
            for trial in range(TRIALS):
                inputs = make(spec, args.seed, index, trial, shape, dtype, "cpu", edge)
                ref_inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                              for x in inputs]
                expected = [e.to("cpu") for e in as_list(spec.reference(*ref_inputs))]
                result = {"shape": list(shape), "dtype": dtype, "trial": trial, "passed": False}
                if edge is not None:
                    result["input_set"] = edge
                if drawn:
                    result["drawn"] = True
                self.verdict["cases"].append(result)
                if trial == 0 and not discriminates(expected, rtol, atol):
                    self.verdict["weak_cases"].append(
                        f"{shape} {dtype}" + (f" ({edge})" if edge else ""))
                if "import_error" in self.verdict:
                    result["problem"] = "the package failed to import: " + \
                        self.verdict["import_error"]
                    continue
                self.at = {"stage": "correct", "case": index, "trial": trial}
                got, problem = self.one_call(inputs, expected, case_id)
                self.last_call = time.monotonic()
                if problem:
                    result["problem"] = problem
                else:
                    result.update(judge_values(got, expected, rtol, atol))
                    print_ = fingerprint(got)
                    self.fingerprints[case_id] = (print_, got_layout(got), result)
                    outputs.append((print_, fingerprint(expected)))
                case_id += 1
            if len(outputs) == TRIALS and outputs[0][0] == outputs[1][0] \
                    and outputs[0][1] != outputs[1][1]:
                for result in self.verdict["cases"][-TRIALS:]:
                    if not result["passed"]:
                        result["problem"] = ("returned the same output for different input sets "
                                             "(cached or replayed): " + result.get("problem", ""))

    def one_call(self, inputs, expected, case_id):
        """Hands one correctness call over and takes the judge's copy of its outputs: (outputs,
        None) or (None, problem)."""
        in_layout, in_size = layout_of(inputs)
        out_layout, out_size = outputs_layout(expected)
        source = Region(in_size, "upskill-inputs")
        write_values(in_layout, source.bytes, 0, inputs)
        source.seal(read_only=True)
        target = Region(out_size, "upskill-outputs")
        target.bytes.fill_(0xFF)  # NaN in every float: an output never written reads as NaN
        target.seal(read_only=False)
        message = {"op": "call", "inputs": in_layout, "in_size": source.size,
                   "outputs": out_layout, "out_size": target.size, "keep": case_id}
        regions = [source, target]
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        if self.cuda:
            # On a device the inputs cannot be made read-only: the worker copies them back as the
            # call left them, and the judge compares them with its own.
            after_layout, after_size = outputs_layout(tensors)
            after = Region(after_size, "upskill-inputs-after")
            after.bytes.fill_(0xFF)
            after.seal(read_only=False)
            regions.append(after)
            message.update(after=after_layout, after_size=after.size)
        try:
            reply = self.candidate.request(message, fds=[r.fd for r in regions])
            copy = target.bytes.clone()  # the judge's copy: what is there now is the answer
            left = place(after_layout, after.bytes.clone(), 0) if self.cuda else None
        finally:
            for region in regions:
                region.close()
        if isinstance(reply.get("error"), str):
            return None, "raised " + reply["error"][:300]
        if isinstance(reply.get("mismatch"), str):
            return None, reply["mismatch"][:300]
        if left is not None:
            changed = [i for i, (a, b) in enumerate(zip(tensors, left)) if not identical(a, b)]
            if changed:
                return None, f"modified its inputs {changed}"
        return place(out_layout, copy, 0), None

    def settle(self):
        """Each correctness call's outputs again, SETTLE_S after the last call: a thread or stream
        the kernel left running has had time to write into them."""
        if not self.fingerprints:
            return
        wait = SETTLE_S - (time.monotonic() - self.last_call)
        if wait > 0:
            time.sleep(wait)
        self.at = {"stage": "settle"}
        for case_id, (print_, layout, result) in self.fingerprints.items():
            out_layout, out_size = layout
            target = Region(out_size, "upskill-settled")
            target.bytes.fill_(0xFF)
            target.seal(read_only=False)
            try:
                reply = self.candidate.request(
                    {"op": "settle", "id": case_id, "outputs": out_layout,
                     "out_size": target.size}, fds=[target.fd])
                now = fingerprint(place(out_layout, target.bytes.clone(), 0))
            finally:
                target.close()
            if reply.get("missing"):
                problem = "its outputs were not kept to be asked for again after the settle delay"
            elif now != print_:
                problem = ("its output changed after the call had returned (something the kernel "
                           "left running wrote into it)")
            else:
                continue
            if result.get("passed"):
                result["passed"] = False
                result["problem"] = problem

    # -- timing --

    def plan(self, index, shape, dtype):
        """How one bench shape is timed: the layout of a call's inputs and outputs and how many
        calls a segment makes (sized by the reference's time and SEGMENT_BYTES)."""
        sample = fresh_inputs(self.spec, shape, dtype)
        in_layout, in_stride = layout_of(sample)
        dev = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in sample]
        ref_ms = math.inf
        for _ in range(3):  # the first call pays for what the reference allocates once
            start = _clock()
            expected = as_list(self.spec.reference(*dev))
            sync(self.device)
            ref_ms = min(ref_ms, (_clock() - start) / 1e6)
        out_layout, out_stride = outputs_layout([e.to("cpu") for e in expected])
        memory = SEGMENT_BYTES["cuda" if self.cuda else "cpu"] // (in_stride + out_stride)
        by_time = math.ceil(SEGMENT_S * 1e3 / max(ref_ms, 1e-3))
        calls = max(2, min(MAX_CALLS, memory, by_time))
        return {"index": index, "shape": shape, "dtype": dtype, "in_layout": in_layout,
                "in_stride": in_stride, "out_layout": out_layout, "out_stride": out_stride,
                "calls": calls, "sample": (sample, [e.to("cpu") for e in expected])}

    def bind(self, peer, plan):
        """The shared memory one worker times one bench shape with: an inputs region only the
        judge can write (sealed; on CUDA the judge checks it after every segment instead), the
        judge's private copy of the inputs (staging) and the snapshot the outputs are judged
        from. On the CPU, upskill pulls the outputs from the worker's memory into the snapshot
        (a region upskill maps); on CUDA the worker copies them into an outputs region and the
        judge copies that into the snapshot. Mapped once, so that what a segment costs is the
        calls and the copies — not mapping memory."""
        n = plan["calls"]
        size_in, size_out = n * plan["in_stride"], n * plan["out_stride"]
        outputs = None
        if self.cuda:
            inputs, outputs = DeviceRegion(size_in), DeviceRegion(size_out)
            snapshot = torch.empty(outputs.size, dtype=torch.uint8, device=self.device)
        else:
            if self.service is None:
                raise SystemExit("timing needs upskill's side of the judge (--service)")
            inputs = Region(size_in, "upskill-bench-inputs")
            inputs.seal(read_only=True)
            outputs = Region(size_out, "upskill-bench-snapshot")
            outputs.seal(read_only=False)
            self.service.map(outputs)
            snapshot = outputs.bytes
        channel = {"inputs": inputs, "outputs": outputs, "plan": plan, "snapshot": snapshot,
                   "staging": torch.empty(inputs.size, dtype=torch.uint8, device=self.device)}
        sample = plan["sample"][0]
        for i in range(n):  # until fresh ones are drawn: the sample inputs in every call
            self.stage(channel, i, sample)
        try:
            reply = peer.request({"op": "bind", "calls": n, "inputs": plan["in_layout"],
                                  "in_stride": plan["in_stride"], "outputs": plan["out_layout"],
                                  "out_stride": plan["out_stride"], "pull": not self.cuda},
                                 fds=[inputs.fd, outputs.fd] if self.cuda else [inputs.fd])
        except Lost:
            self.unbind(peer, channel, tell=False)
            raise
        if reply.get("error"):
            self.unbind(peer, channel, tell=False)
            raise SystemExit(f"the {peer.name} worker could not map the shared memory: "
                             f"{reply['error']}")
        return channel

    def unbind(self, peer, channel, tell=True):
        if tell:
            peer.request({"op": "unbind"})
        channel["snapshot"] = None
        channel["inputs"].close()
        channel["outputs"].close()

    def stage(self, channel, i, values):
        plan = channel["plan"]
        if layout_of(values)[0] != plan["in_layout"]:
            raise SystemExit("the spec's make_inputs made inputs of another layout for the same "
                             "shape")
        write_values(plan["in_layout"], channel["staging"], i * plan["in_stride"], values)

    def segment(self, peer, channel, fn, meter, fresh=False):
        """One timed segment: (ns by the judge's clock, CPU ns of the worker or None). With
        `fresh`, every call's inputs are new, from seeds drawn now in this process. The clock
        starts before the inputs reach the shared region and stops once the snapshot holds the
        outputs: nothing can be prepared before it starts, and nothing written after it stops
        counts. The copies into the snapshot are made by the trusted side (upskill on the CPU,
        the judge on CUDA) in an order drawn now: a worker that answered before its last outputs
        were written cannot know which it still has time for, and none can skip them."""
        plan = channel["plan"]
        if fresh:
            for i in range(plan["calls"]):
                self.stage(channel, i, fresh_inputs(self.spec, plan["shape"], plan["dtype"]))
        channel["snapshot"].fill_(0xFF)  # NaN in every float: an output never copied fails
        if self.cuda:
            channel["outputs"].bytes.fill_(0xFF)
        # Every side starts from the same caches: none of the judge's staging of fresh inputs,
        # nothing of the last segment (on a GPU, the L2 holds none of the inputs).
        self.flush.zero_()
        sync(self.device)
        cpu0 = meter.read() if meter else None
        stride, unread = plan["out_stride"], None
        begin = _clock()
        if self.cuda:
            channel["inputs"].bytes.copy_(channel["staging"])
            sync(self.device)  # on a GPU, the inputs are there before the worker is told
            reply = peer.request({"op": "segment", "fn": fn})
            order = list(range(plan["calls"]))
            random.Random(os.urandom(16)).shuffle(order)
            for i in order:
                channel["snapshot"][i * stride:(i + 1) * stride].copy_(
                    channel["outputs"].bytes[i * stride:(i + 1) * stride])
            sync(self.device)
        else:
            # One call at a time: its inputs handed over only once the last call's outputs are
            # the judge's, so no call can be started, or worked on beside another, before it
            # is asked for.
            inputs, staging, step = channel["inputs"].bytes, channel["staging"], plan["in_stride"]
            for i in range(plan["calls"]):
                inputs[i * step:(i + 1) * step].copy_(staging[i * step:(i + 1) * step])
                reply = peer.request({"op": "segment", "fn": fn, "calls": [i]})
                if "error" in reply or "mismatch" in reply:
                    break
                unread = self.pull(peer, plan, reply.get("outputs"), [i])
                if unread:
                    break
        elapsed = _clock() - begin
        cpu1 = meter.read() if meter else None
        if unread:
            raise CallFailed(unread)
        if self.cuda and not torch.equal(channel["outputs"].bytes, channel["snapshot"]):
            raise CallFailed("it wrote into its outputs after it had answered (what the judge "
                             "copied at the answer is what is checked)")
        if "error" in reply:
            raise CallFailed("a timed call raised " + str(reply["error"])[:300])
        if "mismatch" in reply:
            raise CallFailed("a timed call's output: " + str(reply["mismatch"])[:300])
        if self.cuda and not torch.equal(channel["inputs"].bytes, channel["staging"]):
            raise CallFailed("it modified its inputs during a timed call")
        cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
        return elapsed, cpu

    def pull(self, peer, plan, where, calls):
        """Has upskill copy the outputs of `calls` (call numbers) out of the worker's memory into
        the snapshot; what went wrong in words, or None. `where` is the worker's answer: per call
        asked for, per tensor output, [address, bytes] of its contiguous memory."""
        slots = [entry["tensor"] for entry in plan["out_layout"] if "tensor" in entry]
        if not isinstance(where, list) or len(where) != len(calls):
            return "its answer did not say where each call's outputs are"
        ranges = []
        for i, call in zip(calls, where):
            if not isinstance(call, list) or len(call) != len(slots):
                return "its answer did not say where each call's outputs are"
            for (offset, shape, stride, dtype), at in zip(slots, call):
                nbytes = math.prod(shape) * torch.empty((), dtype=DTYPES[dtype]).element_size()
                if (not isinstance(at, list) or len(at) != 2
                        or not all(isinstance(x, int) and 0 <= x < 1 << 64 for x in at)
                        or at[1] != nbytes):
                    return "its answer named memory of the wrong size for an output"
                ranges.append((at[0], nbytes, i * plan["out_stride"] + offset))
        answer = self.service.pull("c" if peer is self.candidate else "r", ranges, peer)
        if answer == 0:
            return None
        if answer == 2:
            return "the memory it named for an output could not be read"
        return "its process ended while its outputs were being read"

    def segments(self, peer, plan, fn, meter, audit=False):
        """A warm-up segment, then SEGMENTS timed ones (more while they are short, up to
        MAX_SEGMENTS and SEGMENT_BUDGET_S): [(ns, cpu ns or None)]. With `audit`, every timed
        call has fresh inputs and its output is checked after its segment."""
        channel = self.bind(peer, plan)
        timed = []
        try:
            self.segment(peer, channel, fn, meter)
            spent = 0.0
            while len(timed) < SEGMENTS or (len(timed) < MAX_SEGMENTS
                                            and spent < SEGMENT_BUDGET_S):
                elapsed, cpu = self.segment(peer, channel, fn, meter, fresh=audit)
                spent += elapsed / 1e9
                timed.append((elapsed, cpu))
                if audit:
                    self.audit(channel, len(timed) - 1)
        finally:
            try:
                self.unbind(peer, channel)
            except Lost:
                pass
        if os.environ.get("UPSKILL_HARNESS_DEBUG"):
            print(f"{peer.name} {fn} n={plan['calls']}: " +
                  " ".join(f"{ns / 1e6:.1f}" for ns, _ in timed), file=sys.stderr)
        return timed

    def audit(self, channel, segment):
        """Every call of a timed segment, checked against the reference computed here on the
        judge's copy of that call's inputs. Raises CallFailed at the first wrong output."""
        plan = channel["plan"]
        rtol, atol = self.tolerances.get(plan["dtype"], (1e-5, 1e-5))
        for i in range(plan["calls"]):
            values = place(plan["in_layout"], channel["staging"], i * plan["in_stride"],
                           self.device)
            got = place(plan["out_layout"], channel["snapshot"], i * plan["out_stride"],
                        self.device)
            expected = as_list(self.spec.reference(*values))
            result = audit_values([g.to("cpu") if isinstance(g, torch.Tensor) else g for g in got],
                                  [e.to("cpu") for e in expected], rtol, atol)
            if not result.get("passed"):
                raise CallFailed(f"a timed call's output is wrong (segment {segment + 1}, call "
                                 f"{i + 1} of {plan['calls']}): " + result.get("problem", ""))
            self.audited += 1

    def time_reference(self, plans):
        """Before any candidate code is loaded: per bench shape, the timing loop's own cost (a
        function that returns outputs it already has) and the reference, in the reference
        worker, by the judge's clock, their segments taken in turn so that both see the machine
        as it is; torch.compile(reference) too on CUDA."""
        out = []
        for plan in plans:
            entry = {"shape": list(plan["shape"]), "dtype": plan["dtype"],
                     "calls": plan["calls"]}
            try:
                noop, ref = self.alternate(plan, ["noop", "call"])
            except CallFailed as e:
                raise SystemExit(f"the reference failed while it was timed: {e}") from None
            overhead = fastest(noop, plan["calls"])
            entry["overhead_ms"] = overhead
            entry["reference_ms"] = fastest(ref, plan["calls"]) - overhead
            loop_cpu = cpu_per_call(noop, plan["calls"])
            cpu = cpu_per_call(ref, plan["calls"])
            if cpu is not None and loop_cpu is not None:
                entry["reference_cpu_ms"] = max(cpu - loop_cpu, 0.0)
                entry["loop_cpu_ms"] = loop_cpu
            if self.cuda and hasattr(torch, "compile"):
                try:
                    compiled = self.segments(self.reference, plan, "compiled",
                                             self.reference_meter)
                    entry["compiled_ms"] = fastest(compiled, plan["calls"]) - overhead
                except (CallFailed, Lost) as e:
                    entry["compile_problem"] = str(e)[:300]
            out.append(entry)
        return out

    def alternate(self, plan, fns):
        """Segments of each of `fns` in the reference worker, in turn, after one warm-up each:
        [[(ns, cpu ns)] per fn]."""
        channel = self.bind(self.reference, plan)
        timed = [[] for _ in fns]
        try:
            for fn in fns:
                self.segment(self.reference, channel, fn, self.reference_meter)
            spent = 0.0
            while len(timed[0]) < SEGMENTS or (len(timed[0]) < MAX_SEGMENTS
                                               and spent < SEGMENT_BUDGET_S * len(fns)):
                for fn, times in zip(fns, timed):
                    times.append(self.segment(self.reference, channel, fn,
                                              self.reference_meter))
                    spent += times[-1][0] / 1e9
        finally:
            self.unbind(self.reference, channel)
        return timed

    def time_candidate(self, plans, entries):
        bandwidth = copy_bandwidth(self.device)
        for plan, entry in zip(plans, entries):
            self.at = {"stage": "bench", "bench": plan["index"]}
            self.audited = 0
            if "import_error" in self.verdict:
                entry["problem"] = "the package failed to import"
                continue
            try:
                timed = self.segments(self.candidate, plan, "call", self.service, audit=True)
            except CallFailed as e:
                entry["problem"] = str(e)
                continue
            finally:
                entry["audited_calls"] = self.audited
            entry["segments"] = len(timed)
            overhead, ref_ms = entry["overhead_ms"], entry["reference_ms"]
            cand = fastest(timed, plan["calls"]) - overhead
            cpu = cpu_per_call(timed, plan["calls"])
            flags = []
            if cpu is not None and entry.get("loop_cpu_ms") is not None:
                # The kernel's CPU time a call, the loop's own taken off as from the reference's;
                # the cores that makes over the kernel's own time.
                entry["candidate_cpu_ms"] = max(cpu - entry["loop_cpu_ms"], 0.0)
                cores = entry["candidate_cpu_ms"] / cand if cand > 0 else 0.0
                entry["cores_used"] = cores
                if cores > THREADS + 0.5:
                    flags.append(f"its process used {cores:.1f} cores while timed; the reference "
                                 f"was given {THREADS}")
            if cand <= 0 or ref_ms <= 0:
                entry["unmeasured"] = (f"a call takes less than the judge's clock can tell from "
                                       f"the timing loop's own overhead ({overhead:.3g} ms a "
                                       f"call)")
                entry["implausible"] = flags
                continue
            entry["candidate_ms"] = cand
            entry["speedup"] = ref_ms / cand
            if entry.get("compiled_ms", 0) > 0:
                entry["speedup_vs_compile"] = entry["compiled_ms"] / cand
            sample, expected = plan["sample"]
            if hasattr(self.spec, "bytes_moved"):
                moved = self.spec.bytes_moved(sample, expected)
            else:
                moved = sum(x.numel() * x.element_size() for x in sample + expected
                            if isinstance(x, torch.Tensor))
            entry["bytes_moved"] = moved
            entry["achieved_gbps"] = moved / (cand / 1e3) / 1e9
            entry["copy_gbps"] = bandwidth
            entry["bandwidth_fraction"] = entry["achieved_gbps"] / bandwidth if bandwidth else 0.0
            if entry["speedup"] > 10:
                flags.append(f"speedup {entry['speedup']:.1f}x is above 10x")
            if entry["achieved_gbps"] > 2.0 * bandwidth:
                flags.append(f"moves {entry['achieved_gbps']:.0f} GB/s, more than twice the "
                             f"measured copy bandwidth ({bandwidth:.0f} GB/s)")
            entry["implausible"] = flags

    def pulls(self):
        """Whether upskill reads the outputs out of the workers (timing on the CPU)."""
        return self.args.bench and not self.cuda and self.service is not None

    def passed_so_far(self):
        return (all(c.get("passed") for c in self.verdict["cases"])
                and not any(e.get("problem") for e in self.verdict.get("bench", [])))

    # -- the whole run --

    def run(self):
        args = self.args
        plans = []
        try:
            self.start_reference()
            self.candidate.receive(expect_nonce=False)  # it has loaded Python and torch
            if self.pulls():  # found now, while it runs nothing but the harness
                self.service.find("c")
            entries = []
            if args.bench:
                plans = [self.plan(i, shape, dtype)
                         for i, (shape, dtype) in enumerate(bench_cases_of(self.spec))]
                entries = self.time_reference(plans)
            self.stop_reference()
            # Only now is the candidate's code loaded: nothing of it ran while the reference
            # was timed.
            self.at = {"stage": "import"}
            loaded = self.candidate.request({"op": "load",
                                             "call": "import torch\n\n" +
                                             inspect.getsource(self.spec.call)})
            if isinstance(loaded.get("import_error"), str):
                self.verdict["import_error"] = loaded["import_error"][:400]
            self.correctness()
            if args.bench:
                self.verdict["bench"] = entries
                if all(c.get("passed") for c in self.verdict["cases"]):
                    self.time_candidate(plans, entries)
                else:  # the bench stage is not reached: nothing is spent on timing it
                    for entry in entries:
                        entry["problem"] = "not timed: an output was wrong"
            if self.passed_so_far():
                self.settle()  # a failed candidate is not asked for anything more
            finished = self.candidate.request({"op": "exit"})
            denied = finished.get("denied")
            if isinstance(denied, list):
                self.verdict["denied"] = [str(d)[:300] for d in denied[:50]]
        except Lost as e:
            self.verdict["lost"] = dict(self.at, why=str(e))
            if args.bench and "bench" not in self.verdict:
                self.verdict["bench"] = []
        self.verdict["passed"] = (all(c.get("passed") for c in self.verdict["cases"])
                                  and "lost" not in self.verdict and bool(self.verdict["cases"]))
        print("UPSKILL-VERDICT " + json.dumps(self.verdict))


class CallFailed(Exception):
    """A timed call raised, returned the wrong kind of output, or a wrong one."""


def got_layout(got):
    return outputs_layout(got)


def fastest(timed, calls):
    """The fastest segment's time a call, in ms."""
    return min(ns for ns, _ in timed) / calls / 1e6


def cpu_per_call(timed, calls):
    """The CPU time of the fastest segment's worker, per call, in ms; None when not measured."""
    fastest = min(timed, key=lambda t: t[0])
    return fastest[1] / calls / 1e6 if fastest[1] is not None else None


def copy_bandwidth(device):
    """The device's copy bandwidth by the judge's own clock (GB/s, reads and writes counted)."""
    x = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    y.copy_(x)
    times = []
    for _ in range(5):
        sync(device)
        begin = _clock()
        y.copy_(x)
        sync(device)
        times.append((_clock() - begin) / 1e9)
    return 2 * x.numel() * x.element_size() / min(times) / 1e9


def judge(args):
    Judge(args).run()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["judge", "worker"])
    parser.add_argument("--spec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--package")
    parser.add_argument("--name")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--link", type=int, default=LINK_FD)  # the socket to the other side
    parser.add_argument("--service", type=int, default=-1)  # judge: upskill's side (class Service)
    parser.add_argument("--timeout", type=float, default=300.0)  # the candidate's waits in all
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.role == "judge":
        judge(args)
        # The judge ends without tearing torch down (about 0.3 s).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    worker(args)


if __name__ == "__main__":
    main()

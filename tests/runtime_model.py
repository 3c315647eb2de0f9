"""Model-based test of the host runtime's objects and their lifetimes, on several threads.

A hypothesis state machine creates, switches and releases devices, contexts, streams, events, device
and pinned allocations in random order, from three long-lived threads (each call runs on the thread a
rule picks, so the per-thread current context and device matter), and moves bytes between them:
aclrtMemcpy, aclrtMemcpyAsync (H2D, D2H, D2D, between devices, HOST_TO_BUF_TO_DEVICE, through pageable
memory), aclrtMemset, aclrtMemsetAsync, with peer access switched on and off. A model of CANN's rules
as docs/host_runtime.md states them (checked against CANN's source: ApiImpl::StreamDestroy,
ApiImpl::StreamSynchronize, ApiErrorDecorator::ContextSetCurrent, Context::TearDown, ...) tracks each
thread's current context, the devices' references, which contexts, streams and events are live and
which context or device each belongs to, which allocations are live and which stream tasks may still be
queued, and predicts every return code; numpy arrays predict every byte of every allocation, compared
whenever no queued task can still touch it. After each example everything is released in a checked
order, so the next example starts from a clean runtime.

The machine drives libascendcl through ctypes, so it runs against any build of it: the shipped one,
or a sanitizer build (ops_impl/tools/run_sanitizers.py runs it against its ASan and TSan builds).

    python tests/runtime_model.py                          # the short run of the test suite (~15 s)
    python tests/runtime_model.py --examples 5000 --seed 7 # a long run (~4 min)
    python tests/runtime_model.py --soc Ascend310B         # another SoC profile

Each run happens in a child interpreter (the runtime's process state, such as the process default
device, must start fresh); a crash or hang of the child is reported with the calls of the example it
was running, a mismatch with the calls of the shrunk example. Exit status 0 when every call matched
the model.
"""
import argparse
import ctypes
import functools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_runtime import corrected_kind  # noqa: E402  (the kind-correction table)

try:
    import ms_memcopy  # the prototypes and error codes; importing it loads no library
except ImportError:  # run from a checkout without an install (run_sanitizers.py needs no build)
    sys.path.insert(0, str(ROOT))
    import ms_memcopy
from ms_memcopy import _runtime_env, acl_limits  # noqa: E402

H2H, H2D, D2H, D2D, DEFAULT, BUF_H2D = 0, 1, 2, 3, 4, 5
KIND_NAMES = {H2H: "H2H", H2D: "H2D", D2H: "D2H", D2D: "D2D", DEFAULT: "DEFAULT", BUF_H2D: "BUF_H2D", 7: "kind7"}
EVENT_DEFAULT_FLAG = 0x0E  # aclrtCreateEvent: CANN's RT_EVENT_DEFAULT
EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL = 0x10, 0x20
NOT_READY, COMPLETE = 0, 1
MAX_RUNTIME_DEVICES = acl_limits.MAX_RUNTIME_DEVICES  # CANN's RT_MAX_DEV_NUM
MALLOC_GRANULE = 32
HUGE1G_POLICIES = (6, 7)
THREADS = 3
DEVICE_COUNT = 3  # MS_MEMCOPY_DEVICE_COUNT of the child: device 3 is out of range
PAGEABLE_BYTES = 2048
JUNK_HANDLE = 0x7  # names no stream, event or context
CALL_TIMEOUT_S = 120
DEFAULT_EXAMPLES, DEFAULT_STEPS = 300, 60
# --break-model: a deliberately wrong rule, to show that a wrong prediction is reported.
MODEL_BREAKS = ("destroyed-context-falls-back-to-device", "memset-sets-value-plus-one")


class Mismatch(AssertionError):
    pass


class Hang(Exception):
    pass


# --- the threads that make the calls -------------------------------------------------------------

class CallThread:
    """A long-lived thread that runs the calls given to it, one at a time."""

    def __init__(self, name):
        self.name = name
        self.requests = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            request = self.requests.get()
            if request is None:
                return
            fn, result, done = request
            try:
                result.append((True, fn()))
            except BaseException as e:  # handed to the caller
                result.append((False, e))
            done.set()

    def run(self, fn):
        result, done = [], threading.Event()
        self.requests.put((fn, result, done))
        if not done.wait(CALL_TIMEOUT_S):
            raise Hang(f"{self.name}: the call did not return within {CALL_TIMEOUT_S} s")
        ok, value = result[0]
        if not ok:
            raise value
        return value

    def close(self):
        self.requests.put(None)
        self.thread.join()


# --- the library ---------------------------------------------------------------------------------

def load_library(path):
    """libascendcl at path with the prototypes ms_memcopy declares."""
    from ms_memcopy import _acl_lib

    lib = ctypes.CDLL(str(path))
    for table in (_acl_lib.PROTOTYPES, _acl_lib.HOST_PROTOTYPES):
        for name, (restype, argtypes) in table.items():
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype, fn.argtypes = restype, argtypes
    return lib


def error_codes():
    from ms_memcopy import acl_constants as c

    return {name: getattr(c, name) for name in dir(c) if name.startswith("ACL_ERROR_")}


CODES = error_codes()
OK = 0
INVALID_PARAM = CODES["ACL_ERROR_INVALID_PARAM"]                      # 100000
FEATURE_UNSUPPORTED = CODES["ACL_ERROR_FEATURE_UNSUPPORTED"]          # 200006
RT_PARAM_INVALID = CODES["ACL_ERROR_RT_PARAM_INVALID"]                # 107000
RT_INVALID_DEVICEID = CODES["ACL_ERROR_RT_INVALID_DEVICEID"]          # 107001
RT_CONTEXT_NULL = CODES["ACL_ERROR_RT_CONTEXT_NULL"]                  # 107002
RT_STREAM_CONTEXT = CODES["ACL_ERROR_RT_STREAM_CONTEXT"]              # 107003
RT_INVALID_HANDLE = CODES["ACL_ERROR_RT_INVALID_HANDLE"]              # 107017
RT_FEATURE_NOT_SUPPORT = CODES["ACL_ERROR_RT_FEATURE_NOT_SUPPORT"]    # 207000
RT_CONTEXT_RELEASE_ERROR = CODES["ACL_ERROR_RT_CONTEXT_RELEASE_ERROR"]  # 507007
RT_SYS_DMA = CODES["ACL_ERROR_RT_SYS_DMA"]                            # 507013
RT_NO_STREAM_RESOURCE = CODES["ACL_ERROR_RT_NO_STREAM_RESOURCE"]      # 207008


# --- the model's objects -------------------------------------------------------------------------

class Context:
    """A primary context (one per device, live while the device holds references; the same handle in
    every life) or a context of aclrtCreateContext (live until destroyed)."""

    def __init__(self, name, device, primary, handle=None):
        self.name, self.device, self.primary, self.handle = name, device, primary, handle
        self.destroyed = False
        self.default_stream = None  # of the current life


class Stream:
    """A user stream (handle) or a context's default stream (handle None). queued: the tasks queued
    since the model last knew the stream idle; failed: a queued task fails (or failed) and no
    synchronize has reported it yet."""

    def __init__(self, name, context, handle=None):
        self.name, self.context, self.handle = name, context, handle
        self.live = True
        self.queued = []
        self.ran_through = 0
        self.failed = False


class QueuedTask:
    """A queued task: its sequence number, the byte ranges it reads and writes, the device pair it copies
    between (None when on one device or not a copy)."""

    def __init__(self, seq, reads=(), writes=(), peer_pair=None):
        self.seq, self.reads, self.writes, self.peer_pair = seq, list(reads), list(writes), peer_pair


class Allocation:
    """aclrtMalloc ("device"), aclrtMallocHost ("pinned") or the harness's numpy buffer ("pageable"); the
    expected bytes and which of them are known (aclrtMalloc/aclrtMallocHost memory starts unknown)."""

    def __init__(self, name, kind, ptr, usable, device, view):
        import numpy as np

        self.name, self.kind, self.ptr, self.usable, self.device, self.view = name, kind, ptr, usable, device, view
        self.live = True
        self.expected = np.zeros(usable, np.uint8)
        self.known = np.zeros(usable, bool)


class Event:
    """An event of aclrtCreateEvent(WithFlag): its device, its flag, its latest record."""

    def __init__(self, name, handle, device, flag):
        self.name, self.handle, self.device, self.flag = name, handle, device, flag
        self.live = True
        self.record = None  # (stream, sequence number) of the latest record


class Effect:
    """What a call that succeeds does to memory. `drain`: the stream is synchronized first (the pageable
    path); immediate reads/writes happen on the calling thread, queued ones on `stream`; `apply` updates
    the expected bytes; `fails_when_run`: the queued copy fails when it executes (no peer access)."""

    def __init__(self, stream=None, drain=False, immediate_reads=(), immediate_writes=(), queued_reads=(),
                 queued_writes=(), apply=None, peer_pair=None, fails_when_run=False, event=None):
        self.stream, self.drain = stream, drain
        self.immediate_reads, self.immediate_writes = list(immediate_reads), list(immediate_writes)
        self.queued_reads, self.queued_writes = list(queued_reads), list(queued_writes)
        self.apply, self.peer_pair, self.fails_when_run, self.event = apply, peer_pair, fails_when_run, event

    @property
    def queues(self):
        return self.stream is not None and (self.queued_reads or self.queued_writes or self.peer_pair
                                            or self.event is not None)


class Rejected(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def overlaps(ranges_a, ranges_b):
    return any(a[0] == b[0] and a[1] < b[2] and b[1] < a[2] for a in ranges_a for b in ranges_b)


# --- the state machine ---------------------------------------------------------------------------

def make_machine(lib, profile, device_count, model_break=None, abort_before=None):
    """The RuleBasedStateMachine class over `lib` (a loaded libascendcl) with SoC `profile` (its entry of
    configs/soc_profiles.yaml). model_break: one of MODEL_BREAKS; abort_before: an API the process aborts
    in (both for the tests of the test)."""
    import numpy as np
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

    threads = st.integers(0, THREADS - 1)
    # The thread of a call that does work: below THREADS that thread, whatever its context; above, one of
    # the threads that have a context (most calls then pass the context check and reach the others).
    workers = st.integers(0, 4 * THREADS - 1)
    picks = st.integers(0, 2**16)
    device_ids = st.sampled_from([0, 1, 2, 0, 1, 2, 0, 1, device_count, -1])
    peer_ids = st.sampled_from([0, 1, 2, 0, 1, 2, device_count, -1, MAX_RUNTIME_DEVICES + 6])
    sizes = st.sampled_from([1, 17, 64, 100, 256, 1000, 2048])
    copy_kinds = st.sampled_from([DEFAULT] * 4 + [H2D, D2H, D2D, H2H, BUF_H2D, 7])
    # How offset and count are chosen: in range, one byte past the allocation, zero, destMax too small,
    # a NULL pointer.
    shapes = st.sampled_from(["fit"] * 10 + ["past_end", "zero", "small_dest_max", "null"])
    event_flags = st.sampled_from([None, None, 0x1, 0x2, 0x4, 0x8, 0x3, 0xF, EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL,
                                   0x0, 0x40, 0x30, 0x11])

    def step(method):
        """Marks the machine unsettled while a rule runs: an exception leaves it so, and teardown then only
        cleans up."""

        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            outer = self.in_step
            self.in_step = True
            method(self, *args, **kwargs)
            self.in_step = outer

        return wrapped

    class RuntimeMachine(RuleBasedStateMachine):
        # Across examples (the process keeps them): the first device ever set, and the primary contexts'
        # handles, which never change.
        process_default = None
        primary_handles = {}
        trace_file = None
        tally = {}

        def __init__(self):
            super().__init__()
            self.in_step = False
            self.failed = False
            self.threads = [CallThread(f"t{i}") for i in range(THREADS)]
            self.binding = [("unbound",)] * THREADS
            self.refs = [0] * device_count
            self.primaries = {d: Context(f"primary{d}", d, True) for d in range(device_count)}
            self.contexts = []   # of aclrtCreateContext, destroyed ones included
            self.streams = []    # user streams, destroyed ones included
            self.default_streams = []
            self.events = []
            self.allocations = []
            self.peer = set()    # enabled (device, peer) directions
            self.seq = 0
            self.counter = 0
            self.strays = []     # objects the runtime made where the model expected an error
            self.trace = []
            self.pageable = self._pageable_buffer()
            if type(self).trace_file is not None:
                type(self).trace_file.seek(0)
                type(self).trace_file.truncate()

        # --- bookkeeping --------------------------------------------------------------------------

        def _name(self, prefix):
            self.counter += 1
            return f"{prefix}{self.counter}"

        def _pageable_buffer(self):
            array = np.random.default_rng(0).integers(0, 256, PAGEABLE_BYTES, dtype=np.uint8)
            region = Allocation("page", "pageable", array.ctypes.data, PAGEABLE_BYTES, -1, array)
            region.expected[:] = array
            region.known[:] = True
            return region

        def log(self, line, end="\n"):
            self.trace.append(line)
            if type(self).trace_file is not None:
                type(self).trace_file.write(line + end)
                type(self).trace_file.flush()

        def log_result(self, text):
            """Completes the trace's last line (the call) with its result."""
            self.trace[-1] += text
            if type(self).trace_file is not None:
                type(self).trace_file.write(text + "\n")
                type(self).trace_file.flush()

        def call(self, t, label, fn, expected, out=None):
            """Runs fn() (returning an aclError) on thread t and compares its code with `expected` (a code,
            or a set of codes)."""
            self.log(f"t{t}: {label}", end="")  # before the call: a crash leaves it as the last line
            if abort_before and label.startswith(abort_before + "("):
                fn = os.abort  # the driver's own test: the runtime dies inside this call
            try:
                code = self.threads[t].run(fn)
            except Hang as e:  # nothing can be released behind a hung call: report and leave
                self.failed = True
                emit({"failure": f"{e} (a hang)\n  calls of this example:\n    " + "\n    ".join(self.trace),
                      "tally": type(self).tally})
                os._exit(1)
            self.log_result(f" = {code}" + (f" -> {out()}" if out is not None and code == OK else ""))
            api = label.split("(", 1)[0]
            key = f"{api} {code}"
            type(self).tally[key] = type(self).tally.get(key, 0) + 1
            allowed = expected if isinstance(expected, (set, frozenset)) else {expected}
            if code not in allowed:
                self.fail(f"{label} on t{t} returned {code}; the model expects {sorted(allowed)}")
            return code

        def note(self, what):
            """Counts a situation the model predicted (the run's statistics)."""
            key = f"model: {what}"
            type(self).tally[key] = type(self).tally.get(key, 0) + 1

        def fail(self, what):
            self.failed = True
            raise Mismatch(what + "\n  calls of this example:\n    " + "\n    ".join(self.trace))

        def _pick(self, items, pick):
            return items[pick % len(items)] if items else None

        def live_allocations(self):
            return [a for a in self.allocations if a.live]

        def regions(self):
            return self.live_allocations() + [self.pageable]

        def all_streams(self):
            return self.streams + self.default_streams

        # --- the model's rules: contexts and devices ----------------------------------------------

        def context_live(self, context):
            if context.primary:
                return self.refs[context.device] > 0
            return not context.destroyed

        def current(self, t):
            """The thread's current context, or None (107002)."""
            binding = self.binding[t]
            if binding[0] == "unbound":
                d = type(self).process_default
                return self.primaries[d] if d is not None and self.refs[d] > 0 else None
            if binding[0] == "device":
                return self.primaries[binding[1]] if self.refs[binding[1]] > 0 else None
            context = binding[1]
            if model_break == "destroyed-context-falls-back-to-device" and context.destroyed:
                return self.primaries[context.device] if self.refs[context.device] > 0 else None
            return context if self.context_live(context) else None

        def worker(self, t):
            bound = [u for u in range(THREADS) if self.current(u) is not None]
            return t % THREADS if t < THREADS or not bound else bound[t % len(bound)]

        def require_current(self, t):
            context = self.current(t)
            if context is None:
                raise Rejected(RT_CONTEXT_NULL)
            return context

        def resolve_stream(self, t, stream):
            """The stream a call queues on: a live user stream, else (NULL) the current default stream."""
            if stream is not None:
                return stream
            return self.require_current(t).default_stream

        def check_handle(self, stream):
            if stream is not None and not stream.live:
                raise Rejected(RT_INVALID_HANDLE)

        def new_default_stream(self, context):
            stream = Stream(f"{context.name}.default", context)
            context.default_stream = stream
            self.default_streams.append(stream)

        def retire(self, stream):
            """The stream is drained and gone (destroyed, or the default stream of a released context)."""
            self.drain(stream)
            stream.live = False
            stream.failed = False

        def drain(self, stream, through=None):
            """The stream has run every task queued so far (or those up to sequence number `through`)."""
            through = self.seq if through is None else through
            stream.queued = [task for task in stream.queued if task.seq > through]
            stream.ran_through = max(stream.ran_through, through)

        def synchronized(self, stream):
            """aclrtSynchronizeStream's code for the stream, which it drains and whose failure it reports."""
            code = RT_SYS_DMA if stream.failed else OK
            self.drain(stream)
            stream.failed = False
            return code

        def drain_all(self):
            for stream in self.all_streams():
                if stream.live:
                    self.drain(stream)

        # --- the model's rules: memory ------------------------------------------------------------

        def extent_ok(self, region, offset, count):
            return region.kind == "pageable" or offset + count <= region.usable

        def resolve_kind(self, kind, src, dst):
            if kind == BUF_H2D:
                if src.kind == "device" or dst.kind != "device":
                    raise Rejected(RT_PARAM_INVALID)
                return BUF_H2D
            resolved = corrected_kind(kind, src.kind, dst.kind)
            if resolved is None:
                raise Rejected(RT_PARAM_INVALID)
            return resolved

        def crosses_devices(self, resolved, src, dst):
            return resolved == D2D and src.kind == dst.kind == "device" and src.device != dst.device

        def mutual(self, a, b):
            return (a, b) in self.peer and (b, a) in self.peer

        def copy_effect(self, dst, doff, src, soff, count):
            def apply():
                dst.expected[doff:doff + count] = src.expected[soff:soff + count].copy()
                dst.known[doff:doff + count] = src.known[soff:soff + count].copy()
            return apply

        def set_effect(self, dst, off, count, value):
            byte = (value + (1 if model_break == "memset-sets-value-plus-one" else 0)) & 0xFF

            def apply():
                dst.expected[off:off + count] = byte
                dst.known[off:off + count] = True
            return apply

        def predict_memcpy(self, t, dst, doff, dest_max, src, soff, count, kind):
            if count == 0:
                return OK, None
            if dst is None or src is None or kind not in range(6):
                raise Rejected(INVALID_PARAM)
            if dest_max == 0 or count > dest_max:
                raise Rejected(RT_PARAM_INVALID)
            if dst is src and doff == soff:
                return OK, None
            self.require_current(t)
            resolved = self.resolve_kind(kind, src, dst)
            if not self.extent_ok(src, soff, count) or not self.extent_ok(dst, doff, count):
                raise Rejected(RT_PARAM_INVALID)
            if self.crosses_devices(resolved, src, dst) and not self.mutual(src.device, dst.device):
                raise Rejected(RT_SYS_DMA)
            r, w = (src.name, soff, soff + count), (dst.name, doff, doff + count)
            return OK, Effect(immediate_reads=[r], immediate_writes=[w],
                              apply=self.copy_effect(dst, doff, src, soff, count))

        def predict_memcpy_async(self, t, dst, doff, dest_max, src, soff, count, kind, stream):
            if count == 0:
                return OK, None
            if dst is None or src is None or kind not in range(6):
                raise Rejected(INVALID_PARAM)
            self.check_handle(stream)
            if count > dest_max:
                raise Rejected(RT_PARAM_INVALID)
            context = self.require_current(t)
            on = self.resolve_stream(t, stream)
            resolved = self.resolve_kind(kind, src, dst)
            if not self.extent_ok(src, soff, count) or not self.extent_ok(dst, doff, count):
                raise Rejected(RT_PARAM_INVALID)
            if resolved == H2H:
                raise Rejected(RT_FEATURE_NOT_SUPPORT)
            if dst is src and doff == soff:
                return OK, None
            r, w = (src.name, soff, soff + count), (dst.name, doff, doff + count)
            apply = self.copy_effect(dst, doff, src, soff, count)
            if resolved == BUF_H2D:  # the source is copied at the call, the destination written in stream order
                if on.context is not context:
                    raise Rejected(RT_STREAM_CONTEXT)
                return OK, Effect(stream=on, immediate_reads=[r], queued_writes=[w], apply=apply)
            if "pageable" in (src.kind, dst.kind):
                return (RT_SYS_DMA if on.failed else OK), Effect(stream=on, drain=True, immediate_reads=[r],
                                                                 immediate_writes=[w], apply=apply)
            if on.context is not context:
                raise Rejected(RT_STREAM_CONTEXT)
            pair = None
            fails = False
            if self.crosses_devices(resolved, src, dst):
                pair = frozenset((src.device, dst.device))
                fails = not self.mutual(src.device, dst.device)
                self.note("queued copy between devices " + ("without" if fails else "with") + " peer access")
            return OK, Effect(stream=on, queued_reads=[r], queued_writes=[w], apply=None if fails else apply,
                              peer_pair=pair, fails_when_run=fails)

        def predict_memset(self, t, dst, off, max_count, count, value):
            if count == 0:
                return OK, None
            if dst is None:
                raise Rejected(INVALID_PARAM)
            self.require_current(t)
            if count > max_count or dst.kind == "pageable" or not self.extent_ok(dst, off, count):
                raise Rejected(RT_PARAM_INVALID)
            return OK, Effect(immediate_writes=[(dst.name, off, off + count)],
                              apply=self.set_effect(dst, off, count, value))

        def predict_memset_async(self, t, dst, off, max_count, count, value, stream):
            if count == 0:
                return OK, None
            if dst is None:
                raise Rejected(INVALID_PARAM)
            self.check_handle(stream)
            if count > max_count:
                raise Rejected(RT_PARAM_INVALID)
            context = self.require_current(t)
            on = self.resolve_stream(t, stream)
            if on.context is not context:
                raise Rejected(RT_STREAM_CONTEXT)
            if not self.extent_ok(dst, off, count):
                raise Rejected(RT_PARAM_INVALID)
            w = (dst.name, off, off + count)
            apply = self.set_effect(dst, off, count, value)
            if dst.kind != "device":  # host memory is set on the calling thread, without waiting for the stream
                return OK, Effect(immediate_writes=[w], apply=apply)
            return OK, Effect(stream=on, queued_writes=[w], apply=apply)

        # --- making a call whose effect the model knows -------------------------------------------

        def conflicting_streams(self, effect):
            """The streams whose queued tasks touch what the call touches (a race the test must not make)."""
            found = []
            for stream in self.all_streams():
                if not stream.live or not stream.queued:
                    continue
                if effect.drain and stream is effect.stream:
                    continue  # the call synchronizes it first
                for task in stream.queued:
                    with_call = (overlaps(effect.immediate_writes, task.reads + task.writes)
                                 or overlaps(effect.immediate_reads, task.writes))
                    with_task = stream is not effect.stream and (
                        overlaps(effect.queued_writes, task.reads + task.writes)
                        or overlaps(effect.queued_reads, task.writes))
                    if with_call or with_task:
                        found.append(stream)
                        break
            return found

        def settle(self, t, streams):
            """Synchronizes the streams (checked calls) so that what follows cannot race with their tasks;
            False when one of them is a default stream no thread can name (the step is then skipped)."""
            for stream in streams:
                if stream.handle is not None:  # any thread with a context synchronizes it
                    u = t if self.current(t) is not None else next(
                        (u for u in range(THREADS) if self.current(u) is not None), None)
                    if u is None:
                        return False
                    self.call(u, f"aclrtSynchronizeStream({stream.name})",
                              lambda h=stream.handle: lib.aclrtSynchronizeStream(h), self.synchronized(stream))
                    continue
                holder = next((u for u in range(THREADS) if self.current(u) is stream.context), None)
                if holder is None:
                    return False
                self.call(holder, f"aclrtSynchronizeStream(NULL) [{stream.name}]",
                          lambda: lib.aclrtSynchronizeStream(None), self.synchronized(stream))
            return True

        def perform(self, t, label, fn, predict):
            """Predicts the call, settles the streams it would race with, makes it and applies its effect to
            the model. Returns False when the call was skipped."""
            try:
                code, effect = predict()
            except Rejected as e:
                code, effect = e.code, None
            if code == OK and effect is not None:
                conflicts = self.conflicting_streams(effect)
                if conflicts:
                    if not self.settle(t, conflicts):
                        return False
                    try:
                        code, effect = predict()
                    except Rejected as e:
                        code, effect = e.code, None
            self.call(t, label, fn, code)
            if effect is None:
                return True
            if effect.drain:
                self.synchronized(effect.stream)
            if code != OK:
                return True
            # A queued task's bytes are applied now: nothing that could race with it runs before it has
            # (conflicting_streams), so the order of application is the order of execution.
            if effect.apply is not None:
                effect.apply()
            if effect.queues:
                self.seq += 1
                effect.stream.queued.append(QueuedTask(self.seq, effect.queued_reads, effect.queued_writes,
                                                     effect.peer_pair))
                if effect.fails_when_run:
                    effect.stream.failed = True
                if effect.event is not None:
                    effect.event.record = (effect.stream, self.seq)
            return True

        # --- rules: devices -----------------------------------------------------------------------

        @initialize(plan=st.lists(st.tuples(st.sampled_from(["device", "device", "context", "none"]),
                                            st.integers(0, 2), sizes), min_size=THREADS, max_size=THREADS),
                    peer=st.booleans())
        @step
        def bind_threads(self, plan, peer):
            """Each thread starts on a device, on a context it creates, or with neither; each thread with a
            context allocates device and pinned memory, and (peer) enables access to the other devices."""
            for t, (how, device, size) in enumerate(plan):
                if how == "device":
                    self.set_device(t, device)
                elif how == "context":
                    self.create_context(t, device)
                if how != "none":
                    self.malloc(t, size, 0)
                    self.malloc_host(t, size)
                    self.create_event(t, None)
                    for other in range(min(3, device_count)) if peer else ():
                        if other != device:
                            self.change_peer_access(t, other, True, 0)

        @rule(t=threads, device=device_ids)
        @step
        def set_device(self, t, device):
            if not 0 <= device < device_count:
                self.call(t, f"aclrtSetDevice({device})", lambda: lib.aclrtSetDevice(device), RT_INVALID_DEVICEID)
                return
            self.call(t, f"aclrtSetDevice({device})", lambda: lib.aclrtSetDevice(device), OK)
            self.refs[device] += 1
            if self.refs[device] == 1:
                self.new_default_stream(self.primaries[device])
            self.binding[t] = ("device", device)
            if type(self).process_default is None:
                type(self).process_default = device

        @rule(t=threads, device=device_ids)
        @step
        def reset_device(self, t, device):
            label = f"aclrtResetDevice({device})"
            if not 0 <= device < device_count:
                self.call(t, label, lambda: lib.aclrtResetDevice(device), RT_INVALID_DEVICEID)
                return
            if self.refs[device] == 0:
                self.call(t, label, lambda: lib.aclrtResetDevice(device), RT_CONTEXT_RELEASE_ERROR)
                return
            self.call(t, label, lambda: lib.aclrtResetDevice(device), OK)
            self.refs[device] -= 1
            if self.refs[device] == 0:
                self.retire(self.primaries[device].default_stream)

        @rule(t=workers)
        @step
        def get_device(self, t):
            t = self.worker(t)
            out = ctypes.c_int32(-1)
            context = self.current(t)
            self.call(t, "aclrtGetDevice(&id)", lambda: lib.aclrtGetDevice(ctypes.byref(out)),
                      OK if context else RT_CONTEXT_NULL, out=lambda: out.value)
            if context is not None and out.value != context.device:
                self.fail(f"aclrtGetDevice on t{t} gave device {out.value}; the model expects {context.device}")

        @rule(t=workers)
        @step
        def synchronize_device(self, t):
            t = self.worker(t)
            context = self.current(t)
            if context is None:
                self.call(t, "aclrtSynchronizeDevice()", lambda: lib.aclrtSynchronizeDevice(), RT_CONTEXT_NULL)
                return
            streams = [s for s in self.streams if s.live and s.context is context] + [context.default_stream]
            codes = [self.synchronized(s) for s in streams]
            self.call(t, "aclrtSynchronizeDevice()", lambda: lib.aclrtSynchronizeDevice(),
                      next((c for c in codes if c != OK), OK))

        @rule(t=workers)
        @step
        def get_mem_info(self, t):
            t = self.worker(t)
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            context = self.current(t)
            self.call(t, "aclrtGetMemInfo(ACL_HBM_MEM, &free, &total)",
                      lambda: lib.aclrtGetMemInfo(1, ctypes.byref(free), ctypes.byref(total)),
                      OK if context else RT_CONTEXT_NULL)
            if context is not None:
                used = sum(a.usable for a in self.live_allocations()
                           if a.kind == "device" and a.device == context.device)
                if total.value - free.value != used:
                    self.fail(f"aclrtGetMemInfo on t{t}: total - free = {total.value - free.value}; the model's "
                              f"live aclrtMalloc bytes of device {context.device}: {used}")

        # --- rules: contexts ----------------------------------------------------------------------

        def context_choices(self):
            known = [c for c in self.primaries.values() if c.handle is not None]  # learnt in this example
            return self.contexts + known

        @rule(t=threads, device=device_ids)
        @step
        def create_context(self, t, device):
            out = ctypes.c_void_p()
            label = f"aclrtCreateContext(&ctx, {device})"
            if not 0 <= device < device_count:
                code = self.call(t, label, lambda: lib.aclrtCreateContext(ctypes.byref(out), device),
                                 RT_INVALID_DEVICEID)
                return
            context = Context(self._name("ctx"), device, False)
            code = self.call(t, label.replace("&ctx", "&" + context.name),
                             lambda: lib.aclrtCreateContext(ctypes.byref(out), device), OK)
            assert code == OK
            context.handle = out.value
            self.contexts.append(context)
            self.new_default_stream(context)
            self.binding[t] = ("context", context)

        @rule(t=threads, pick=picks, junk=st.booleans())
        @step
        def destroy_context(self, t, pick, junk):
            context = None if junk else self._pick(self.context_choices(), pick)
            if context is None:
                self.call(t, "aclrtDestroyContext(junk)", lambda: lib.aclrtDestroyContext(JUNK_HANDLE),
                          RT_CONTEXT_NULL)
                return
            if context.primary or context.destroyed:
                self.call(t, f"aclrtDestroyContext({context.name})",
                          lambda: lib.aclrtDestroyContext(context.handle), RT_CONTEXT_NULL)
                return
            self.call(t, f"aclrtDestroyContext({context.name})", lambda: lib.aclrtDestroyContext(context.handle), OK)
            context.destroyed = True
            for stream in self.streams:
                if stream.live and stream.context is context:
                    self.retire(stream)
            self.retire(context.default_stream)

        @rule(t=threads, pick=picks, junk=st.booleans())
        @step
        def set_current_context(self, t, pick, junk):
            context = None if junk else self._pick(self.context_choices(), pick)
            if context is None:
                self.call(t, "aclrtSetCurrentContext(junk)", lambda: lib.aclrtSetCurrentContext(JUNK_HANDLE),
                          RT_PARAM_INVALID)
                return
            live = self.context_live(context)
            self.call(t, f"aclrtSetCurrentContext({context.name})",
                      lambda: lib.aclrtSetCurrentContext(context.handle), OK if live else RT_PARAM_INVALID)
            if live:
                self.binding[t] = ("context", context)

        @rule(t=workers)
        @step
        def get_current_context(self, t):
            t = self.worker(t)
            out = ctypes.c_void_p()
            context = self.current(t)
            self.call(t, "aclrtGetCurrentContext(&ctx)", lambda: lib.aclrtGetCurrentContext(ctypes.byref(out)),
                      OK if context else RT_CONTEXT_NULL, out=lambda: hex(out.value or 0))
            if context is None:
                return
            if context.primary:
                seen = type(self).primary_handles.setdefault(context.device, out.value)
                if out.value != seen:
                    self.fail(f"aclrtGetCurrentContext on t{t}: primary context of device {context.device} is "
                              f"{out.value:#x}, earlier {seen:#x}; its handle never changes")
                if any(c.handle == out.value for c in self.contexts):
                    self.fail(f"aclrtGetCurrentContext on t{t}: the primary context's handle {out.value:#x} is "
                              f"also a created context's")
                context.handle = out.value
            elif out.value != context.handle:
                self.fail(f"aclrtGetCurrentContext on t{t} gave {out.value:#x}; the model expects "
                          f"{context.name} ({context.handle:#x})")

        # --- rules: streams -----------------------------------------------------------------------

        def stream_arg(self, t, pick, null, any_one_in=3):
            """(model stream or None for NULL, handle, name): NULL, or mostly a live stream of the thread's
            current context, else (one pick in any_one_in) any stream, of another context or destroyed."""
            if null or not self.streams:
                return None, None, "NULL"
            own = [s for s in self.streams if s.live and s.context is self.current(t)]
            n = any_one_in
            stream = self._pick(self.streams, pick // n) if pick % n == 0 or not own else own[pick // n % len(own)]
            return stream, stream.handle, stream.name

        @rule(t=workers)
        @step
        def create_stream(self, t):
            t = self.worker(t)
            out = ctypes.c_void_p()
            context = self.current(t)
            if context is None:
                self.call(t, "aclrtCreateStream(&s)", lambda: lib.aclrtCreateStream(ctypes.byref(out)),
                          RT_CONTEXT_NULL)
                if out.value:
                    self.strays.append(("stream", out.value))
                return
            stream = Stream(self._name("s"), context)
            self.call(t, f"aclrtCreateStream(&{stream.name})", lambda: lib.aclrtCreateStream(ctypes.byref(out)), OK)
            stream.handle = out.value
            self.streams.append(stream)

        @rule(t=workers)
        @step
        def fill_device_with_streams(self, t):
            """Creates streams in the current context until aclrtCreateStream refuses one (207008: the device
            holds max_streams streams, its contexts' default streams included), which must happen after
            exactly as many as the model's count of the device's live streams leaves room for; then destroys
            them. The stream accounting of releases is what RemoveDefaultStream got wrong."""
            t = self.worker(t)
            context = self.current(t)
            if context is None:
                return
            device = context.device
            used = sum(s.live and s.context.device == device for s in self.all_streams())
            room = profile["max_streams"] - used

            def fill():
                made, code = [], OK
                while code == OK and len(made) <= room:
                    out = ctypes.c_void_p()
                    code = lib.aclrtCreateStream(ctypes.byref(out))
                    if code == OK:
                        made.append(out.value)
                return len(made), code, [lib.aclrtDestroyStream(handle) for handle in made]

            self.log(f"t{t}: aclrtCreateStream until it fails, then aclrtDestroyStream of each", end="")
            created, code, destroyed = self.threads[t].run(fill)
            self.log_result(f" = {created} streams, then {code}; destroyed: {sorted(set(destroyed))}")
            for key in (f"aclrtCreateStream {code}", "model: device filled with streams"):
                type(self).tally[key] = type(self).tally.get(key, 0) + 1
            if (created, code) != (room, RT_NO_STREAM_RESOURCE) or any(destroyed):
                self.fail(f"device {device} took {created} more streams, then {code}; the model: {room} "
                          f"({profile['max_streams']} less {used} live), then {RT_NO_STREAM_RESOURCE}")

        @rule(t=workers, pick=picks)
        @step
        def destroy_stream(self, t, pick):
            """aclrtDestroyStream, mostly from a thread whose current context is the stream's (CANN's
            ApiImpl::StreamDestroy: 107002 without a context, 107003 from another one)."""
            if not self.streams:
                return
            stream = self._pick(self.streams, pick)
            owners = [u for u in range(THREADS) if self.current(u) is stream.context]
            t = t % THREADS if t < THREADS or not owners else owners[t % len(owners)]
            context = self.current(t)
            if not stream.live:
                expected = RT_INVALID_HANDLE
            elif context is None:
                expected = RT_CONTEXT_NULL
            elif stream.context is not context:
                expected = RT_STREAM_CONTEXT
            else:
                expected = OK
            self.call(t, f"aclrtDestroyStream({stream.name})", lambda: lib.aclrtDestroyStream(stream.handle), expected)
            if expected == OK:
                self.retire(stream)

        @rule(t=workers, pick=picks, null=st.booleans(), timeout=st.sampled_from([None, None, -1, 60000, 0, -2]))
        @step
        def synchronize_stream(self, t, pick, null, timeout):
            """aclrtSynchronizeStream, or aclrtSynchronizeStreamWithTimeout (a timeout that never expires here:
            an expiry is a hang)."""
            t = self.worker(t)
            stream, handle, name = self.stream_arg(t, pick, null, any_one_in=2)
            try:
                if timeout is not None and timeout < -1:  # the ACL layer, before the handle guard
                    raise Rejected(RT_PARAM_INVALID)
                self.check_handle(stream)
                if timeout == 0:  # ApiErrorDecorator::StreamSynchronize
                    raise Rejected(RT_PARAM_INVALID)
                self.require_current(t)  # ApiImpl::StreamSynchronize, whatever the stream
                on = self.resolve_stream(t, stream)
                expected = self.synchronized(on)
            except Rejected as e:
                expected = e.code
            if timeout is None:
                label, fn = f"aclrtSynchronizeStream({name})", lambda: lib.aclrtSynchronizeStream(handle)
            else:
                label = f"aclrtSynchronizeStreamWithTimeout({name}, {timeout})"
                fn = lambda: lib.aclrtSynchronizeStreamWithTimeout(handle, timeout)
            self.call(t, label, fn, expected)

        @rule(t=threads, pick=picks, deferred=st.booleans())
        @step
        def set_stream_deferred(self, t, pick, deferred):
            """aclhostSetStreamDeferred: the stream's tasks run when a thread waits for it (the CPU kernels'
            streams). The model's rules do not change: a task counts as run only once a wait has returned."""
            if not self.streams:
                return
            stream = self._pick(self.streams, pick)
            self.call(t, f"aclhostSetStreamDeferred({stream.name}, {int(deferred)})",
                      lambda: lib.aclhostSetStreamDeferred(stream.handle, int(deferred)),
                      OK if stream.live else RT_INVALID_HANDLE)

        # --- rules: memory ------------------------------------------------------------------------

        @rule(t=workers, size=sizes, policy=st.sampled_from([0, 0, 0, 2, 6]))
        @step
        def malloc(self, t, size, policy):
            t = self.worker(t)
            out = ctypes.c_void_p()
            context = self.current(t)
            name = self._name("dev")
            self.call(t, f"aclrtMalloc(&{name}, {size}, {policy})",
                      lambda: lib.aclrtMalloc(ctypes.byref(out), size, policy), OK if context else RT_CONTEXT_NULL,
                      out=lambda: hex(out.value))
            if context is None:
                if out.value:
                    self.strays.append(("device", out.value))
                return
            extra = 0 if policy in HUGE1G_POLICIES else profile["malloc_extra_bytes"]
            usable = (size + MALLOC_GRANULE - 1) // MALLOC_GRANULE * MALLOC_GRANULE + extra
            self.add_allocation(name, "device", out.value, usable, context.device)

        @rule(t=workers, size=sizes)
        @step
        def malloc_host(self, t, size):
            t = self.worker(t)
            out = ctypes.c_void_p()
            context = self.current(t)
            name = self._name("pin")
            self.call(t, f"aclrtMallocHost(&{name}, {size})", lambda: lib.aclrtMallocHost(ctypes.byref(out), size),
                      OK if context else RT_CONTEXT_NULL, out=lambda: hex(out.value))
            if context is None:
                if out.value:
                    self.strays.append(("pinned", out.value))
                return
            self.add_allocation(name, "pinned", out.value, size, -1)

        def add_allocation(self, name, kind, ptr, usable, device):
            if any(a.live and a.ptr < ptr + usable and ptr < a.ptr + a.usable for a in self.allocations):
                self.fail(f"{name} at {ptr:#x} overlaps a live allocation")
            view = np.ctypeslib.as_array((ctypes.c_uint8 * usable).from_address(ptr))
            self.allocations.append(Allocation(name, kind, ptr, usable, device, view))

        @rule(t=threads, pick=picks, host=st.booleans())
        @step
        def free(self, t, pick, host):
            """aclrtFree / aclrtFreeHost of an allocation of either kind, live or already freed."""
            if not self.allocations:
                return
            target = self._pick(self.allocations, pick)
            api = "aclrtFreeHost" if host else "aclrtFree"
            # A freed address may have been handed out again: the runtime sees whatever lives there now.
            owner = next((a for a in self.allocations if a.live and a.ptr == target.ptr), None)
            ok = owner is not None and owner.kind == ("pinned" if host else "device")
            self.call(t, f"{api}({target.name}{'' if owner in (target, None) else ' = ' + owner.name})",
                      lambda: getattr(lib, api)(target.ptr), OK if ok else RT_PARAM_INVALID)
            if ok:
                self.drain_all()
                owner.live = False
                owner.view = None

        @rule(pick=picks, offset=picks, count=picks, seed=picks)
        @step
        def host_write(self, pick, offset, count, seed):
            """The program writes pinned or pageable memory itself."""
            region = self._pick([a for a in self.regions() if a.kind != "device"], pick)
            offset %= region.usable
            count = 1 + count % (region.usable - offset)
            effect = Effect(immediate_writes=[(region.name, offset, offset + count)])
            conflicts = self.conflicting_streams(effect)
            if conflicts and not self.settle(0, conflicts):
                return
            data = np.random.default_rng(seed).integers(0, 256, count, dtype=np.uint8)
            self.log(f"write {region.name}[{offset}:{offset + count}]")
            region.view[offset:offset + count] = data
            region.expected[offset:offset + count] = data
            region.known[offset:offset + count] = True

        def geometry(self, dst, src, a, b, c, shape):
            """(dst offset, src offset, count, destMax) of a copy, or of a memset when src is None."""
            doff = a % dst.usable
            soff = 0 if src is None else b % src.usable
            room = dst.usable - doff if src is None else min(dst.usable - doff, src.usable - soff)
            count = 1 + c % room
            dest_max = dst.usable - doff
            if shape == "zero":
                count = 0
            elif shape == "past_end" and dst.kind != "pageable" and (src is None or src.kind != "pageable"):
                count = room + 1 + c % 64
                dest_max = count
            elif shape == "small_dest_max":
                dest_max = count - 1
            return doff, soff, count, dest_max

        def region(self, pick):
            """A live allocation, or (one pick in eight, or when there is none) the pageable buffer."""
            live = self.live_allocations()
            return self.pageable if pick % 8 == 5 or not live else live[pick // 8 % len(live)]

        def regions_for_copy(self, dpick, spick):
            return self.region(dpick), self.region(spick)

        def pointer(self, region, offset, shape):
            if shape == "null":
                return None, "NULL"
            return region.ptr + offset, f"{region.name}+{offset}"

        @rule(t=workers, dpick=picks, spick=picks, a=picks, b=picks, c=picks, shape=shapes, kind=copy_kinds)
        @step
        def memcpy(self, t, dpick, spick, a, b, c, shape, kind):
            t = self.worker(t)
            dst, src = self.regions_for_copy(dpick, spick)
            doff, soff, count, dest_max = self.geometry(dst, src, a, b, c, shape)
            dptr, dname = self.pointer(dst, doff, shape)
            sptr = src.ptr + soff
            label = f"aclrtMemcpy({dname}, {dest_max}, {src.name}+{soff}, {count}, {KIND_NAMES[kind]})"
            self.perform(t, label, lambda: lib.aclrtMemcpy(dptr, dest_max, sptr, count, kind),
                         lambda: self.predict_memcpy(t, dst if dptr else None, doff, dest_max, src, soff, count, kind))

        @rule(t=workers, dpick=picks, spick=picks, a=picks, b=picks, c=picks, shape=shapes, kind=copy_kinds,
              spick2=picks, null=st.booleans())
        @step
        def memcpy_async(self, t, dpick, spick, a, b, c, shape, kind, spick2, null):
            t = self.worker(t)
            dst, src = self.regions_for_copy(dpick, spick)
            doff, soff, count, dest_max = self.geometry(dst, src, a, b, c, shape)
            dptr, dname = self.pointer(dst, doff, shape)
            sptr = src.ptr + soff
            stream, handle, sname = self.stream_arg(t, spick2, null)
            label = (f"aclrtMemcpyAsync({dname}, {dest_max}, {src.name}+{soff}, {count}, {KIND_NAMES[kind]}, "
                     f"{sname})")
            self.perform(t, label, lambda: lib.aclrtMemcpyAsync(dptr, dest_max, sptr, count, kind, handle),
                         lambda: self.predict_memcpy_async(t, dst if dptr else None, doff, dest_max, src, soff, count,
                                                           kind, stream))

        @rule(t=workers, dpick=picks, spick=picks, a=picks, b=picks, c=picks, queued=st.booleans(),
              spick2=picks, null=st.booleans())
        @step
        def copy_between_devices(self, t, dpick, spick, a, b, c, queued, spick2, null):
            """aclrtMemcpy or aclrtMemcpyAsync (DEFAULT) from one device's memory to another device's: peer
            access in both directions decides, at the call or when the queued copy runs."""
            t = self.worker(t)
            device_memory = [a for a in self.live_allocations() if a.kind == "device"]
            pairs = [(d, s) for d in device_memory for s in device_memory if d.device != s.device]
            if not pairs:
                return
            dst, src = pairs[(dpick + spick) % len(pairs)]
            doff, soff, count, dest_max = self.geometry(dst, src, a, b, c, "fit")
            label = f"{dst.name}+{doff}, {dest_max}, {src.name}+{soff}, {count}, DEFAULT"
            if not queued:
                self.perform(t, f"aclrtMemcpy({label})",
                             lambda: lib.aclrtMemcpy(dst.ptr + doff, dest_max, src.ptr + soff, count, DEFAULT),
                             lambda: self.predict_memcpy(t, dst, doff, dest_max, src, soff, count, DEFAULT))
                return
            stream, handle, sname = self.stream_arg(t, spick2, null)
            self.perform(t, f"aclrtMemcpyAsync({label}, {sname})",
                         lambda: lib.aclrtMemcpyAsync(dst.ptr + doff, dest_max, src.ptr + soff, count, DEFAULT,
                                                      handle),
                         lambda: self.predict_memcpy_async(t, dst, doff, dest_max, src, soff, count, DEFAULT, stream))

        @rule(t=workers, dpick=picks, a=picks, c=picks, shape=shapes, value=st.integers(-300, 300))
        @step
        def memset(self, t, dpick, a, c, shape, value):
            t = self.worker(t)
            dst = self.region(dpick)
            off, _, count, max_count = self.geometry(dst, None, a, 0, c, shape)
            ptr, name = self.pointer(dst, off, shape)
            self.perform(t, f"aclrtMemset({name}, {max_count}, {value}, {count})",
                         lambda: lib.aclrtMemset(ptr, max_count, value, count),
                         lambda: self.predict_memset(t, dst if ptr else None, off, max_count, count, value))

        @rule(t=workers, dpick=picks, a=picks, c=picks, shape=shapes, value=st.integers(-300, 300), spick=picks,
              null=st.booleans())
        @step
        def memset_async(self, t, dpick, a, c, shape, value, spick, null):
            t = self.worker(t)
            dst = self.region(dpick)
            off, _, count, max_count = self.geometry(dst, None, a, 0, c, shape)
            ptr, name = self.pointer(dst, off, shape)
            stream, handle, sname = self.stream_arg(t, spick, null)
            self.perform(t, f"aclrtMemsetAsync({name}, {max_count}, {value}, {count}, {sname})",
                         lambda: lib.aclrtMemsetAsync(ptr, max_count, value, count, handle),
                         lambda: self.predict_memset_async(t, dst if ptr else None, off, max_count, count, value,
                                                           stream))

        # --- rules: events ------------------------------------------------------------------------

        @rule(t=workers, flag=event_flags)
        @step
        def create_event(self, t, flag):
            t = self.worker(t)
            out = ctypes.c_void_p()
            effective = EVENT_DEFAULT_FLAG if flag is None else flag
            sole = (EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL)
            context = self.current(t)
            if effective & 0x3F == 0 or effective > 0x3F or any(effective & s and effective & ~s for s in sole):
                expected = RT_PARAM_INVALID
            elif context is None:
                expected = RT_CONTEXT_NULL
            elif effective == EVENT_DEVICE_USE_ONLY and not profile["event_device_use_only"]:
                expected = RT_FEATURE_NOT_SUPPORT
            else:
                expected = OK
            name = self._name("ev")
            if flag is None:
                label, fn = f"aclrtCreateEvent(&{name})", lambda: lib.aclrtCreateEvent(ctypes.byref(out))
            else:
                label = f"aclrtCreateEventWithFlag(&{name}, {flag:#x})"
                fn = lambda: lib.aclrtCreateEventWithFlag(ctypes.byref(out), flag)
            self.call(t, label, fn, expected)
            if expected == OK:
                self.events.append(Event(name, out.value, context.device, effective))
            elif out.value:
                self.strays.append(("event", out.value))

        def event_arg(self, pick):
            return self._pick(self.events, pick)

        @rule(t=workers, pick=picks, spick=picks, null=st.booleans(), then=st.sampled_from([None, "query", "sync"]))
        @step
        def record_event(self, t, pick, spick, null, then):
            """aclrtRecordEvent, mostly of a live event of the current device; then (then) at once, in the same
            call on the same thread, aclrtQueryEventStatus or aclrtSynchronizeEvent of it, while the stream
            may be reaching the record (the window a data race between them needs)."""
            t = self.worker(t)
            context = self.current(t)
            own = [e for e in self.events if e.live and context is not None and e.device == context.device]
            event = self.event_arg(pick // 3) if pick % 3 == 0 or not own else own[pick // 3 % len(own)]
            if event is None:
                return
            stream, handle, sname = self.stream_arg(t, spick, null)

            def predict():
                if not event.live:
                    raise Rejected(RT_INVALID_HANDLE)
                self.check_handle(stream)
                if event.flag == EVENT_DEVICE_USE_ONLY:
                    raise Rejected(RT_PARAM_INVALID)
                context = self.require_current(t)
                on = self.resolve_stream(t, stream)
                if on.context is not context or on.context.device != event.device:
                    raise Rejected(RT_STREAM_CONTEXT)
                return OK, Effect(stream=on, event=event)

            status = ctypes.c_int(-1)
            followed = []

            def record_then():
                code = lib.aclrtRecordEvent(event.handle, handle)
                if then == "query":
                    followed.append(lib.aclrtQueryEventStatus(event.handle, ctypes.byref(status)))
                elif then == "sync":
                    followed.append(lib.aclrtSynchronizeEvent(event.handle))
                return code

            label = f"aclrtRecordEvent({event.name}, {sname})"
            if then == "query":
                label += f"; aclrtQueryEventStatus({event.name}, &status)"
            elif then == "sync":
                label += f"; aclrtSynchronizeEvent({event.name})"
            if not self.perform(t, label, record_then, predict) or then is None:
                return
            self.log(f"    then {followed[0]}" + (f" -> {status.value}" if then == "query" else ""))
            if then == "query":
                self.check_query(t, event, followed[0], status.value)
            else:
                self.check_synchronize(t, event, followed[0])

        def event_complete(self, event):
            """True, False, or None when the model cannot tell (the record may or may not have run)."""
            if event.record is None:
                return False
            stream, seq = event.record
            return True if stream.ran_through >= seq else None

        def event_code(self, event):
            """aclrtQueryEventStatus's and aclrtSynchronizeEvent's code for the event."""
            if not event.live:
                return RT_INVALID_HANDLE
            return RT_FEATURE_NOT_SUPPORT if event.flag == EVENT_EXTERNAL else OK

        def check_query(self, t, event, code, status):
            label = f"aclrtQueryEventStatus({event.name}, &status) on t{t}"
            if code != self.event_code(event):
                self.fail(f"{label} returned {code}; the model expects {self.event_code(event)}")
            if code != OK:
                return
            complete = self.event_complete(event)
            allowed = {NOT_READY, COMPLETE} if complete is None else {COMPLETE if complete else NOT_READY}
            if status not in allowed:
                self.fail(f"{label} gave status {status}; the model expects {sorted(allowed)}")

        def check_synchronize(self, t, event, code):
            if code != self.event_code(event):
                self.fail(f"aclrtSynchronizeEvent({event.name}) on t{t} returned {code}; the model expects "
                          f"{self.event_code(event)}")
            if code == OK and event.record is not None:
                stream, seq = event.record
                self.drain(stream, through=seq)

        @rule(t=threads, pick=picks)
        @step
        def query_event(self, t, pick):
            event = self.event_arg(pick)
            if event is None:
                return
            status = ctypes.c_int(-1)
            code = self.call(t, f"aclrtQueryEventStatus({event.name}, &status)",
                             lambda: lib.aclrtQueryEventStatus(event.handle, ctypes.byref(status)),
                             self.event_code(event), out=lambda: status.value)
            self.check_query(t, event, code, status.value)

        @rule(t=threads, pick=picks)
        @step
        def synchronize_event(self, t, pick):
            event = self.event_arg(pick)
            if event is None:
                return
            code = self.call(t, f"aclrtSynchronizeEvent({event.name})", lambda: lib.aclrtSynchronizeEvent(event.handle),
                             self.event_code(event))
            self.check_synchronize(t, event, code)

        @rule(t=threads, pick=picks)
        @step
        def destroy_event(self, t, pick):
            event = self.event_arg(pick)
            if event is None:
                return
            self.call(t, f"aclrtDestroyEvent({event.name})", lambda: lib.aclrtDestroyEvent(event.handle),
                      OK if event.live else RT_INVALID_HANDLE)
            event.live = False

        # --- rules: peer access -------------------------------------------------------------------

        @rule(t=threads, device=peer_ids, peer=peer_ids)
        @step
        def can_access_peer(self, t, device, peer):
            out = ctypes.c_int32(-1)
            if device == peer:
                expected = INVALID_PARAM
            elif not 0 <= peer < device_count:
                expected = RT_INVALID_DEVICEID
            elif not 0 <= device < MAX_RUNTIME_DEVICES:
                expected = RT_PARAM_INVALID
            elif not profile["peer_access"]:
                expected = RT_FEATURE_NOT_SUPPORT
            elif not 0 <= device < device_count:
                expected = RT_INVALID_DEVICEID
            else:
                expected = OK
            self.call(t, f"aclrtDeviceCanAccessPeer(&can, {device}, {peer})",
                      lambda: lib.aclrtDeviceCanAccessPeer(ctypes.byref(out), device, peer), expected,
                      out=lambda: out.value)
            if expected == OK and out.value != 1:
                self.fail(f"aclrtDeviceCanAccessPeer({device}, {peer}) gave {out.value}; every pair can")

        @rule(t=threads, device=peer_ids, peer=peer_ids)
        @step
        def peer_access_status(self, t, device, peer):
            out = ctypes.c_int32(-1)
            in_range = all(0 <= d < MAX_RUNTIME_DEVICES for d in (device, peer))
            self.call(t, f"aclrtDevicePeerAccessStatus({device}, {peer}, &status)",
                      lambda: lib.aclrtDevicePeerAccessStatus(device, peer, ctypes.byref(out)),
                      OK if in_range else RT_PARAM_INVALID, out=lambda: out.value)
            if in_range:
                want = int(device != peer and self.mutual(device, peer))
                if out.value != want:
                    self.fail(f"aclrtDevicePeerAccessStatus({device}, {peer}) gave {out.value}; the model: {want}")

        @rule(t=workers, peer=peer_ids, enable=st.booleans(), flags=st.sampled_from([0, 0, 0, 0, 1]))
        @step
        def change_peer_access(self, t, peer, enable, flags):
            t = self.worker(t)
            context = self.current(t)
            if enable and flags:
                expected = FEATURE_UNSUPPORTED
            elif context is None:
                expected = RT_CONTEXT_NULL
            elif peer == context.device:
                expected = INVALID_PARAM
            elif not 0 <= peer < device_count:
                expected = RT_INVALID_DEVICEID
            elif not profile["peer_access"]:
                expected = RT_FEATURE_NOT_SUPPORT
            else:
                expected = OK
            if expected == OK:
                # A queued copy between the two devices reads the table when it runs: let it run first.
                pair = frozenset((context.device, peer))
                busy = [s for s in self.all_streams() if s.live and any(p.peer_pair == pair for p in s.queued)]
                if busy and not self.settle(t, busy):
                    return
            if enable:
                label, fn = f"aclrtDeviceEnablePeerAccess({peer}, {flags})", \
                    lambda: lib.aclrtDeviceEnablePeerAccess(peer, flags)
            else:
                label, fn = f"aclrtDeviceDisablePeerAccess({peer})", lambda: lib.aclrtDeviceDisablePeerAccess(peer)
            self.call(t, label, fn, expected)
            if expected == OK:
                (self.peer.add if enable else self.peer.discard)((context.device, peer))

        # --- what is checked after every step -----------------------------------------------------

        @invariant()
        def bytes_match_the_model(self):
            busy = {r[0] for s in self.all_streams() if s.live for p in s.queued for r in p.reads + p.writes}
            for region in self.regions():
                if region.name in busy:
                    continue
                differ = (region.view != region.expected) & region.known
                if differ.any():
                    where = int(differ.nonzero()[0][0])
                    self.fail(f"{region.name}: {int(differ.sum())} bytes differ from the model, the first at "
                              f"{where} (runtime {region.view[where]}, model {region.expected[where]})")

        @invariant()
        def live_counts_match_the_model(self):
            events, pinned = ctypes.c_uint64(), ctypes.c_uint64()
            assert lib.aclhostGetLiveResourceCounts(ctypes.byref(events), ctypes.byref(pinned)) == OK
            want = (sum(e.live for e in self.events), sum(a.live and a.kind == "pinned" for a in self.allocations))
            if (events.value, pinned.value) != want:
                self.fail(f"aclhostGetLiveResourceCounts: {events.value} events, {pinned.value} pinned "
                          f"allocations; the model: {want[0]}, {want[1]}")

        # --- after each example: release everything, in a checked order ---------------------------

        def teardown(self):
            try:
                if self.in_step or self.failed:
                    self.release_unchecked()
                    return
                try:
                    self.release_checked()
                except BaseException:
                    self.release_unchecked()
                    raise
            finally:
                for thread in self.threads:
                    thread.close()

        def enter(self, t, context):
            """Makes the context current on thread t (checked): aclrtSetCurrentContext of a created context,
            aclrtSetDevice for a primary one (one more reference, which the teardown releases)."""
            if self.current(t) is context:
                return
            if context.primary:
                self.set_device(t, context.device)
            else:
                self.call(t, f"aclrtSetCurrentContext({context.name})",
                          lambda: lib.aclrtSetCurrentContext(context.handle), OK)
                self.binding[t] = ("context", context)

        def release_checked(self):
            self.log("-- teardown")
            for stream in self.streams:
                if stream.live:
                    self.enter(0, stream.context)
                    self.call(0, f"aclrtDestroyStream({stream.name})",
                              lambda h=stream.handle: lib.aclrtDestroyStream(h), OK)
                    self.retire(stream)
            for context in self.contexts:
                if not context.destroyed:
                    self.call(0, f"aclrtDestroyContext({context.name})",
                              lambda h=context.handle: lib.aclrtDestroyContext(h), OK)
                    context.destroyed = True
                    self.retire(context.default_stream)
            for device in range(device_count):
                while self.refs[device]:
                    self.call(0, f"aclrtResetDevice({device})", lambda d=device: lib.aclrtResetDevice(d), OK)
                    self.refs[device] -= 1
                if self.primaries[device].default_stream is not None and self.primaries[device].default_stream.live:
                    self.retire(self.primaries[device].default_stream)
                self.call(0, f"aclrtResetDevice({device})", lambda d=device: lib.aclrtResetDevice(d),
                          RT_CONTEXT_RELEASE_ERROR)
            self.bytes_match_the_model()  # every stream has drained
            for allocation in self.allocations:
                if allocation.live:
                    api = "aclrtFreeHost" if allocation.kind == "pinned" else "aclrtFree"
                    self.call(0, f"{api}({allocation.name})", lambda a=allocation, f=api: getattr(lib, f)(a.ptr), OK)
                    allocation.live = False
            for event in self.events:
                if event.live:
                    self.call(0, f"aclrtDestroyEvent({event.name})", lambda h=event.handle: lib.aclrtDestroyEvent(h),
                              OK)
                    event.live = False
            for device, peer in sorted(self.peer):
                self.call(0, f"aclrtSetDevice({device})", lambda d=device: lib.aclrtSetDevice(d), OK)
                if type(self).process_default is None:
                    type(self).process_default = device
                self.call(0, f"aclrtDeviceDisablePeerAccess({peer})",
                          lambda p=peer: lib.aclrtDeviceDisablePeerAccess(p), OK)
                self.call(0, f"aclrtResetDevice({device})", lambda d=device: lib.aclrtResetDevice(d), OK)
            self.peer.clear()
            self.live_counts_match_the_model()

        def release_unchecked(self):
            """After a mismatch: give back what the model and the strays know, and every device reference,
            so that the next example (hypothesis shrinking) starts clean as far as possible."""
            run = self.threads[0].run
            entries = [lambda c=c: lib.aclrtSetCurrentContext(c.handle) for c in self.contexts]
            entries += [lambda d=d: lib.aclrtSetDevice(d) for d in range(device_count)]
            stray_streams = [handle for kind, handle in self.strays if kind == "stream"]
            for handle in [s.handle for s in self.streams] + stray_streams:
                for enter in entries:  # a stream is destroyed with its context current: try each
                    run(enter)
                    if run(lambda h=handle: lib.aclrtDestroyStream(h)) in (OK, RT_INVALID_HANDLE):
                        break
            for kind, handle in self.strays:
                fn = {"event": lib.aclrtDestroyEvent, "device": lib.aclrtFree, "pinned": lib.aclrtFreeHost}.get(kind)
                if fn is not None:
                    run(lambda f=fn, h=handle: f(h))
            for context in self.contexts:
                run(lambda h=context.handle: lib.aclrtDestroyContext(h))
            for allocation in self.allocations:
                if allocation.live:
                    run(lambda p=allocation.ptr: lib.aclrtFree(p))
                    run(lambda p=allocation.ptr: lib.aclrtFreeHost(p))
            for event in self.events:
                run(lambda h=event.handle: lib.aclrtDestroyEvent(h))
            for device in range(device_count):
                run(lambda d=device: lib.aclrtSetDevice(d))
                if type(self).process_default is None:
                    type(self).process_default = device
                for peer in range(device_count):
                    if peer != device:
                        run(lambda p=peer: lib.aclrtDeviceDisablePeerAccess(p))
                for _ in range(100000):
                    if run(lambda d=device: lib.aclrtResetDevice(d)) != OK:
                        break

    return RuntimeMachine


# --- running it ----------------------------------------------------------------------------------

def read_profile(lib):
    import yaml

    with open(ROOT / "configs" / "soc_profiles.yaml", encoding="utf-8") as f:
        table = yaml.safe_load(f)
    name = lib.aclhostGetSocProfile()
    name = name.decode() if name else table["default"]
    return name, table["profiles"][name]


def worker(args):
    """Runs the state machine in this process; prints one JSON line with the outcome."""
    from hypothesis import HealthCheck, Phase, seed, settings
    from hypothesis.stateful import run_state_machine_as_test

    lib = load_library(args.library)
    count = ctypes.c_uint32()
    assert lib.aclrtGetDeviceCount(ctypes.byref(count)) == OK
    soc, profile = read_profile(lib)
    machine = make_machine(lib, profile, count.value, args.break_model, args.abort_before)
    if args.trace_file:
        machine.trace_file = open(args.trace_file, "w", encoding="utf-8")
    config = settings(max_examples=args.examples, stateful_step_count=args.steps, deadline=None, database=None,
                      print_blob=False, report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                      phases=[Phase.explicit, Phase.generate] + ([] if args.no_shrink else [Phase.shrink]))
    seed(args.seed)(machine)
    start = time.monotonic()
    failure = None
    try:
        run_state_machine_as_test(machine, settings=config)
    except Mismatch as e:
        failure = str(e)
    except Exception:  # a fault of the harness itself, with hypothesis's steps to replay it
        failure = traceback.format_exc()
    emit({"done": args.examples, "soc": soc, "seconds": round(time.monotonic() - start, 1), "failure": failure,
          "tally": machine.tally})
    return 0 if failure is None else 1


def emit(outcome):
    """The worker's result, one JSON line on stdout (the driver reads the last one)."""
    print(json.dumps(outcome), flush=True)


def child_env(soc):
    env = _runtime_env.without_machine(os.environ)  # the runtime's variables are set here, never inherited
    env[_runtime_env.DEVICE_COUNT] = str(DEVICE_COUNT)
    if soc:
        env[_runtime_env.SOC] = soc
    parent = os.path.dirname(os.path.dirname(os.path.abspath(ms_memcopy.__file__)))  # the same ms_memcopy
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [parent, env.get("PYTHONPATH")]))
    return env


def run(examples=DEFAULT_EXAMPLES, steps=DEFAULT_STEPS, seed=0, library=None, soc=None, break_model=None,
        no_shrink=False, timeout=1800, env=None, abort_before=None):
    """Runs the machine in a child interpreter. Returns (outcome dict or None, list of findings)."""
    if library is None:
        library = ms_memcopy.get_acl_library()
    with tempfile.TemporaryDirectory(prefix="ms_memcopy_model_") as tmp:
        trace = Path(tmp) / "trace.txt"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--examples", str(examples), "--steps",
               str(steps), "--seed", str(seed), "--library", str(library), "--trace-file", str(trace)]
        if break_model:
            cmd += ["--break-model", break_model]
        if no_shrink:
            cmd.append("--no-shrink")
        if abort_before:
            cmd += ["--abort-before", abort_before]
        child = child_env(soc)
        child.update(env or {})
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, env=child, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, [f"timed out after {timeout} s (a hang); the calls of the last example:\n"
                          f"{trace.read_text() if trace.exists() else ''}"]
        outcome = None
        for line in result.stdout.splitlines():
            if line.startswith("{"):
                outcome = json.loads(line)
        if outcome is None or result.returncode not in (0, 1):
            calls = trace.read_text() if trace.exists() else "(none)"
            status = (f"signal {signal.Signals(-result.returncode).name}" if result.returncode < 0
                      else f"exit status {result.returncode}")
            return outcome, [f"the model's process ended without a result ({status}) in an example whose calls were "
                             f"(the last one without a code never returned):\n{calls}\n"
                             f"stderr (end):\n{result.stderr[-6000:]}"]
        findings = [outcome["failure"]] if outcome["failure"] else []
        if result.returncode != 0 and not findings:
            findings.append(f"exit status {result.returncode}\n{result.stderr[-6000:]}")
        return outcome, findings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="most rules per example")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--library", help="the libascendcl to test (default: the one ms_memcopy ships)")
    parser.add_argument("--soc", help="MS_MEMCOPY_SOC of the run (default: the default profile)")
    parser.add_argument("--break-model", choices=MODEL_BREAKS, help=argparse.SUPPRESS)
    parser.add_argument("--abort-before", help=argparse.SUPPRESS)
    parser.add_argument("--no-shrink", action="store_true", help="report the first failing example as found")
    parser.add_argument("--stats", action="store_true", help="print the calls made per API and code")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    start = time.monotonic()
    outcome, findings = run(args.examples, args.steps, args.seed, args.library, args.soc, args.break_model,
                            args.no_shrink)
    if outcome is not None and "done" in outcome:
        print(f"{outcome['done']} examples of up to {args.steps} steps, SoC {outcome['soc']}, seed {args.seed}: "
              f"{time.monotonic() - start:.1f} s")
        if args.stats:
            for key in sorted(outcome["tally"]):
                print(f"  {key}: {outcome['tally'][key]}")
    for finding in findings:
        print(finding)
    print("model: " + ("PASS" if not findings else "FAIL"))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

"""Workloads: what one thread does, deterministic given its thread id.

Each workload's run(tid, iters) returns the list of outputs of that thread. The same call made
single-threaded before the threads start is the reference its concurrent run must reproduce
(see suite_harness.compare for the tolerances).
"""

import copy
import queue
import threading
import time

import torch

import suite_harness as H
import suite_models as M


class Workload:
    tol = H.MODEL_TOL
    name = "workload"

    def __init__(self, device, batch=4):
        self.device = device
        self.batch = batch

    def run(self, tid, iters):
        raise NotImplementedError

    def reference(self, threads, iters):
        """Single-threaded outputs of every thread id, moved to the CPU."""
        return [[t.cpu() for t in self.run(tid, iters)] for tid in range(threads)]


class RawOps(Workload):
    """randn from a per-thread seeded generator, mm, relu and a device synchronize per step
    (the seeds' first passing test, and the ops that crashed stock 2.9.1)."""

    tol = H.EXACT
    name = "raw"

    def __init__(self, device, size=64, sync_each=True):
        super().__init__(device)
        self.size = size
        self.sync_each = sync_each

    def run(self, tid, iters):
        gen = H.make_generator(torch, self.device, 1000 + tid)
        outs = []
        for _ in range(iters):
            x = torch.randn(self.size, self.size, generator=gen, device=self.device)
            y = torch.relu(torch.mm(x, x))
            if self.sync_each:
                H.synchronize(torch, self.device)
            outs.append(y)
        return outs


def _inputs(name, batch, tid, device, count=3):
    return [M.model_input(name, batch, 7000 + 31 * tid + i, device) for i in range(count)]


class LinearWork(Workload):
    """One linear layer in one of four formulations; "mixed" gives thread i formulation i % 4
    so that all four run side by side."""

    name = "linear"

    def __init__(self, device, variant="f_linear", path="default", batch=4):
        super().__init__(device, batch)
        if variant != "mixed" and variant not in M.LINEAR_VARIANTS:
            raise ValueError("unknown linear variant %r" % variant)
        self.variant = variant
        self.params = M.LinearParams(11, device, path)
        self._inputs = {}

    def variant_of(self, tid):
        if self.variant == "mixed":
            return M.LINEAR_VARIANTS[tid % len(M.LINEAR_VARIANTS)]
        return self.variant

    def inputs(self, tid):
        if tid not in self._inputs:
            self._inputs[tid] = _inputs("mlp", self.batch, tid, self.device)
        return self._inputs[tid]

    def run(self, tid, iters):
        xs = self.inputs(tid)
        v = self.variant_of(tid)
        return [M.linear_apply(v, self.params, xs[i % len(xs)]) for i in range(iters)]


class ModelWork(Workload):
    """Forwards of the named model.

    sharing "shared": one instance used by every thread;
            "per-thread": thread i has its own instance (seed 100 + i) built on the main thread;
            "in-thread": thread i moves its own CPU-built instance to the device itself
                         (device-side creation inside the thread, the seed's per-thread case).
    name "mixed" gives thread i model MODEL_NAMES[i % 4] (shared instances).
    """

    def __init__(self, device, name, sharing="shared", batch=4):
        super().__init__(device, batch)
        self.name = name
        self.sharing = sharing
        self._inputs = {}
        self._cpu_models = {}
        self._models = {}
        if name == "mixed":
            self._shared = {m: M.build_model(m, 100, device) for m in M.MODEL_NAMES}
        elif sharing == "shared":
            self._shared = {name: M.build_model(name, 100, device)}
        elif sharing not in ("per-thread", "in-thread"):
            raise ValueError("unknown sharing %r" % sharing)

    def model_name(self, tid):
        if self.name == "mixed":
            return M.MODEL_NAMES[tid % len(M.MODEL_NAMES)]
        return self.name

    def prepare(self, threads):
        """Build per-thread models and inputs on the main thread (model init uses the global
        RNG, which threads must not reseed concurrently)."""
        for tid in range(threads):
            self.inputs(tid)
            if self.name != "mixed" and self.sharing == "per-thread":
                self._models[tid] = M.build_model(self.name, 100 + tid, self.device)
            elif self.name != "mixed" and self.sharing == "in-thread":
                self._cpu_models[tid] = M.build_model(self.name, 100 + tid, "cpu")

    def inputs(self, tid):
        if tid not in self._inputs:
            self._inputs[tid] = _inputs(self.model_name(tid), self.batch, tid, self.device)
        return self._inputs[tid]

    def model(self, tid):
        if self.name == "mixed" or self.sharing == "shared":
            return self._shared[self.model_name(tid)]
        if self.sharing == "per-thread":
            return self._models[tid]
        return copy.deepcopy(self._cpu_models[tid]).to(self.device)

    def run(self, tid, iters):
        model = self.model(tid)
        xs = self.inputs(tid)
        return [M.forward(model, xs[i % len(xs)]) for i in range(iters)]


def check(workload, results, refs):
    """Assert that every thread reproduced its reference."""
    H.check_threads(results, refs, workload.tol)


def run_and_check(workload, threads, iters, timeout):
    """Reference first (single-threaded), then all threads together behind a barrier."""
    if hasattr(workload, "prepare"):
        workload.prepare(threads)
    refs = workload.reference(threads, iters)
    results = H.run_threads(threads, lambda tid: workload.run(tid, iters), timeout)
    check(workload, results, refs)
    return results


# Op classes of the thread-boundary finder.
BOUNDARY_OPS = ("raw", "f_linear", "nn_linear", "mlp", "sequential", "conv1d", "transformer")


def boundary_workload(op, device, knobs):
    if op == "raw":
        return RawOps(device, size=knobs["raw_size"])
    if op in ("f_linear", "nn_linear"):
        return LinearWork(device, variant=op, batch=knobs["batch"])
    if op in M.MODEL_NAMES:
        return ModelWork(device, op, "shared", batch=knobs["batch"])
    raise ValueError("unknown boundary op class %r (have %s)" % (op, ", ".join(BOUNDARY_OPS)))


# ---------------------------------------------------------------------------------------------
# Integer-valued float32 work. Matrices hold small integers (-3..3) and every product is reduced
# back into that range with remainder(., 7) - 3, so every intermediate is an integer far below
# 2**24: float32 (and TF32) represent it exactly and a matmul gives the same bits whatever
# algorithm, split or summation order the library picks for a call. Results can therefore be
# compared exactly on every device, and any difference at all is a data race, never rounding.


def int_matrix(n, seed, device, cols=None):
    """An n x cols (default n x n) float32 matrix of integers -3..3 from seed, made on the CPU
    and moved to device."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-3, 4, (n, cols or n), generator=gen, dtype=torch.float32).to(device)


def int_reduce(x):
    """Back into -3..3, exactly (x holds integers)."""
    return torch.remainder(x, 7) - 3


class IntChain(Workload):
    """A chain of steps matmuls of one thread's own integer matrices: enough queued device work
    to still be running when the thread has moved on. run(tid) returns the device tensor of the
    last step and never synchronizes or reads it."""

    tol = H.EXACT
    name = "int_chain"

    def __init__(self, device, size, steps):
        super().__init__(device)
        self.size = size
        self.steps = steps
        self._mats = {}

    def prepare(self, threads):
        for tid in range(threads):
            self.mats(tid)

    def mats(self, tid):
        if tid not in self._mats:
            self._mats[tid] = (int_matrix(self.size, 3000 + 2 * tid, self.device),
                               int_matrix(self.size, 3001 + 2 * tid, self.device))
        return self._mats[tid]

    def run(self, tid, iters=1):
        x, w = self.mats(tid)
        y = x
        for _ in range(self.steps * iters):
            y = int_reduce(y @ w)
        return y

    def reference(self, threads, iters=1):
        out = []
        for tid in range(threads):
            y = self.run(tid, iters)
            out.append(y.cpu())
        return out


class AllocChurn(Workload):
    """Allocation churn with sizes recycled between threads (issue 7, hazard 1).

    Each step allocates two fresh n x n inputs on the device (randint from the thread's own
    generator), queues a matmul that reads them, frees them at once (the matmul may not have
    run yet), then allocates and writes a scratch buffer of the same size (filled with tid + 1)
    and queues a second matmul. Sizes rotate through one list shared by all threads, offset by
    thread id, so a block one thread frees is exactly what another asks for next. An allocator
    that hands a block to another stream while the freeing stream's queued work still reads it
    lets the scratch write land in someone else's inputs: that thread's result is then wrong.
    Nothing synchronizes inside the loop; the outputs (one n x n per step) are kept.
    """

    tol = H.EXACT
    name = "alloc_churn"

    def __init__(self, device, sizes):
        super().__init__(device)
        self.sizes = list(sizes)

    def run(self, tid, iters):
        gen = H.make_generator(torch, self.device, 4000 + tid)
        outs = []
        with H.thread_stream(torch, self.device):
            for i in range(iters):
                n = self.sizes[(tid + i) % len(self.sizes)]
                a = torch.randint(-3, 4, (n, n), generator=gen, device=self.device,
                                  dtype=torch.float32)
                b = torch.randint(-3, 4, (n, n), generator=gen, device=self.device,
                                  dtype=torch.float32)
                c = int_reduce(a @ b)
                del a, b  # back to the allocator while the matmul may still be queued
                scratch = torch.full((n, n), float(tid + 1), device=self.device)
                d = int_reduce(c @ c + scratch)
                del c, scratch
                outs.append(d)
        return outs


# ---------------------------------------------------------------------------------------------
# First use of several kinds of op (test_startup.py::test_two_phase_first_use). Each kind is
# one call that, on MPS, initialises something lazily on first use: the device generator,
# blit copies, matmul kernels, MPSGraph-built ops, the range/eye factories and renorm (which
# in v2.9.1 fetch the stream's command encoder before dispatching onto its queue), and the
# device synchronize itself.

FIRST_USE_KINDS = ("randn", "copy", "mm", "linear", "conv1d", "norm", "factories", "renorm",
                   "sync")


def first_use(kind, tid, device):
    """Run one op of kind for thread tid on device; return its result on the CPU."""
    import torch.nn.functional as F

    seed = 6000 + 17 * tid
    if kind == "randn":
        gen = H.make_generator(torch, device, seed)
        y = torch.randn(16, 16, generator=gen, device=device)
    elif kind == "copy":
        y = int_matrix(32, seed, device) * 2
    elif kind == "mm":
        a, b = int_matrix(48, seed, device), int_matrix(48, seed + 1, device)
        y = int_reduce(a @ b)
    elif kind == "linear":
        gen = torch.Generator().manual_seed(seed)
        x, w, b = (torch.randn(8, 32, generator=gen), torch.randn(24, 32, generator=gen),
                   torch.randn(24, generator=gen))
        y = F.linear(x.to(device), w.to(device), b.to(device))
    elif kind == "conv1d":
        gen = torch.Generator().manual_seed(seed)
        x, w = torch.randn(2, 4, 32, generator=gen), torch.randn(8, 4, 3, generator=gen)
        y = F.conv1d(x.to(device), w.to(device), padding=1)
    elif kind == "norm":
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(8, 64, generator=gen).to(device)
        y = torch.softmax(F.gelu(F.layer_norm(x, (64,))), dim=-1)
    elif kind == "factories":
        y = torch.arange(64, device=device, dtype=torch.float32).reshape(8, 8) * (tid + 1) + \
            torch.eye(8, device=device)
    elif kind == "renorm":
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(6, 16, generator=gen).to(device)
        y = torch.renorm(x, p=2, dim=0, maxnorm=1.0)
    elif kind == "sync":
        y = int_matrix(16, seed, device) + 1
        H.synchronize(torch, device)
    else:
        raise ValueError("unknown first-use kind %r (have %s)" % (kind, ", ".join(FIRST_USE_KINDS)))
    return y.cpu()


def first_use_order(tid):
    """Thread tid starts with kind tid % K and goes on through the others in turn, so that at
    the barrier every kind is somebody's first op and each kind's first use is shared."""
    k = len(FIRST_USE_KINDS)
    return [FIRST_USE_KINDS[(tid + j) % k] for j in range(k)]


def first_use_all(tid, device):
    """Every kind in thread tid's order: {kind: result on the CPU}."""
    return {kind: first_use(kind, tid, device) for kind in first_use_order(tid)}


# ---------------------------------------------------------------------------------------------
# Hand-offs between threads with no explicit synchronize (issue 18, hazard 1). A tensor made on
# one thread and used on another is ordered on one device queue (the CUDA default stream, the
# MPS default stream that every thread shares unless PYTORCH_MPS_PER_THREAD_STREAMS=1); with a
# stream per thread and nothing recorded between them, the consumer may read it before it is
# written. Nothing here synchronizes: the reads themselves (.cpu(), .item()) are the only
# waits, as in user code that was correct on v2.9.1. All values are integers held exactly in
# float32 (see int_matrix), so every comparison is exact and any difference is a race.

HANDOFF_SOURCES = ("copy", "randn")


def busy_chain(y, w, steps):
    """steps integer matmuls of y by w: queued device work that keeps a stream busy."""
    for _ in range(steps):
        y = int_reduce(y @ w)
    return y


class PrefetchHandoff:
    """Producers make device tensors and hand them through one queue.Queue to consumers.

    Per item, a producer first queues handoff_backlog matmuls of its own (so that its queue is
    busy when the item is made: on one queue the item is written after them, and a consumer on
    another stream would find it unwritten), then makes the item:
      copy   an integer matrix built on the CPU (pinned where the device supports it) and moved
             with x.to(device, non_blocking=True), as a prefetching data loader does;
      randn  torch.randn(..., device=device) from the producer's own seeded generator.
    A consumer takes any producer's item, queues floor(8 x) @ W (copy: x @ W) reduced back to
    -3..3, and reads both the item and that result to the host. The host source of a copy
    travels with the item, so that its lifetime is never the question.
    """

    tol = H.EXACT

    def __init__(self, device, source, size, backlog, items):
        if source not in HANDOFF_SOURCES:
            raise ValueError("unknown hand-off source %r (have %s)" % (
                source, ", ".join(HANDOFF_SOURCES)))
        self.device = device
        self.source = source
        self.size = size
        self.backlog = backlog
        self.items = items
        self.weight_cpu = int_matrix(size, 9000, "cpu")
        self.weight = self.weight_cpu.to(device)
        self.pinned, self.pin_why = (H.pinned_memory(torch, device) if source == "copy"
                                     else (False, "randn makes the item on the device"))
        self._busy = {}

    def busy(self, pid, device=None):
        device = device or self.device
        key = (pid, device)
        if key not in self._busy:
            self._busy[key] = (int_matrix(self.size, 9100 + 2 * pid, device),
                               int_matrix(self.size, 9101 + 2 * pid, device))
        return self._busy[key]

    def prepare(self, producers):
        for pid in range(producers):
            self.busy(pid)

    def host_item(self, pid, i):
        return int_matrix(self.size, 10000 + 1000 * pid + i, "cpu")

    def derive(self, x, weight):
        if self.source == "randn":
            x = torch.floor(x * 8)  # exact: a power-of-two scale, then integers up to ~45
        return int_reduce(x @ weight)

    def reference(self, producers):
        """({(pid, i): (item, derived)}, [last backlog value per producer]) on the CPU."""
        items, busy = {}, []
        for pid in range(producers):
            gen = H.make_generator(torch, self.device, 5000 + pid) if self.source == "randn" \
                else None
            for i in range(self.items):
                if gen is None:
                    x = self.host_item(pid, i)
                else:
                    x = torch.randn(self.size, self.size, generator=gen, device=self.device).cpu()
                items[(pid, i)] = (x, self.derive(x, self.weight_cpu))
            b, w = self.busy(pid, "cpu")
            busy.append(busy_chain(b, w, self.backlog * self.items))
        return items, busy

    def produce(self, pid, put):
        """Queue the backlog and make each item; put((pid, i, item, host source)). Returns the
        backlog's last value (a device tensor, read by the caller)."""
        gen = H.make_generator(torch, self.device, 5000 + pid) if self.source == "randn" \
            else None
        y, w = self.busy(pid)
        for i in range(self.items):
            y = busy_chain(y, w, self.backlog)
            host = None
            if gen is None:
                host = self.host_item(pid, i)
                if self.pinned:
                    host = host.pin_memory()
                x = host.to(self.device, non_blocking=True)
            else:
                x = torch.randn(self.size, self.size, generator=gen, device=self.device)
            put((pid, i, x, host))
        return y

    def consume(self, item):
        pid, i, x, host = item
        z = self.derive(x, self.weight)  # queued first: a kernel reading x on this thread
        return (pid, i), (x.cpu(), z.cpu())

    def run(self, producers, consumers, timeout):
        """All producers and consumers together; returns ({(pid, i): (item, derived)} as the
        consumers read them, [each producer's last backlog value on the CPU])."""
        handoff = queue.Queue()
        results = {}
        left = [producers]
        lock = threading.Lock()

        def producer(pid):
            try:
                return self.produce(pid, handoff.put).cpu()
            finally:
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:  # every producer is done (or failed): release the consumers
                    for _ in range(consumers):
                        handoff.put(None)

        def consumer(cid):
            while True:
                item = handoff.get(timeout=timeout)
                if item is None:
                    return None
                key, value = self.consume(item)
                results[key] = value

        out = H.run_threads(producers + consumers,
                            lambda tid: producer(tid) if tid < producers else
                            consumer(tid - producers), timeout)
        return results, out[:producers]

    def check(self, results, busy, refs):
        """AssertionError naming how many hand-offs were wrong and the first of them."""
        want_items, want_busy = refs
        bad = []
        for key in sorted(want_items):
            if key not in results:
                bad.append("producer %d item %d: never consumed" % key)
                continue
            (x, z), (wx, wz) = results[key], want_items[key]
            msg = H.compare(x, wx, self.tol, "producer %d item %d read by a consumer" % key) or \
                H.compare(z, wz, self.tol, "producer %d item %d computed on by a consumer" % key)
            if msg:
                bad.append(msg)
        for pid, (have, want) in enumerate(zip(busy, want_busy)):
            msg = H.compare(have, want, self.tol, "producer %d backlog" % pid)
            if msg:
                bad.append(msg)
        if bad:
            raise AssertionError("%d of %d hand-offs through the queue wrong (%s); first: %s" % (
                len(bad), len(want_items) + len(want_busy), self.source, bad[0]))


class ReturnedTensors:
    """Workers compute on the device and hand their (unread) results to the main thread.

    Each step: an integer matrix moved to the device, a chain of handoff_backlog matmuls by the
    worker's own matrix, the result handed over without a synchronize or a read. The main
    thread reads every result: y.sum().item(), y[-1, -1].item() and y.cpu(), alternating which
    comes first, so each kind of read is the first wait on some results."""

    tol = H.EXACT

    def __init__(self, device, size, backlog, steps):
        self.device = device
        self.size = size
        self.backlog = backlog
        self.steps = steps
        self._w = {}

    def weight(self, tid, device=None):
        device = device or self.device
        if (tid, device) not in self._w:
            self._w[(tid, device)] = int_matrix(self.size, 11000 + tid, device)
        return self._w[(tid, device)]

    def prepare(self, threads):
        for tid in range(threads):
            self.weight(tid)

    def host_input(self, tid, step):
        return int_matrix(self.size, 12000 + 1000 * tid + step, "cpu")

    def run(self, tid, put=None):
        """Returns [(tid, step, y)], or hands each to put as soon as it is queued."""
        w = self.weight(tid)
        outs = []
        for step in range(self.steps):
            y = busy_chain(self.host_input(tid, step).to(self.device), w, self.backlog)
            if put is None:
                outs.append((tid, step, y))
            else:
                put((tid, step, y))
        return outs

    def reference(self, threads):
        """{(tid, step): (y, sum, last element)} on the CPU."""
        refs = {}
        for tid in range(threads):
            w = self.weight(tid, "cpu")
            for step in range(self.steps):
                y = busy_chain(self.host_input(tid, step), w, self.backlog)
                refs[(tid, step)] = (y, float(y.sum()), float(y[-1, -1]))
        return refs

    @staticmethod
    def read(y, step):
        """(y on the host, its sum, its last element), reading in a step-dependent order."""
        if step % 2 == 0:
            total = y.sum().item()
            last = y[-1, -1].item()
            host = y.cpu()
        else:
            host = y.cpu()
            last = y[-1, -1].item()
            total = y.sum().item()
        return host, float(total), float(last)

    def check(self, results, refs):
        bad = []
        for key in sorted(refs):
            if key not in results:
                bad.append("worker %d step %d: never read" % key)
                continue
            (host, total, last), (want, want_total, want_last) = results[key], refs[key]
            msg = H.compare(host, want, self.tol, "worker %d step %d .cpu()" % key)
            if msg is None and total != want_total:
                msg = "worker %d step %d .sum().item() is %r, want %r" % (key + (total, want_total))
            if msg is None and last != want_last:
                msg = "worker %d step %d [-1, -1].item() is %r, want %r" % (
                    key + (last, want_last))
            if msg:
                bad.append(msg)
        if bad:
            raise AssertionError("%d of %d results read by the main thread wrong; first: %s" % (
                len(bad), len(refs), bad[0]))


# ---------------------------------------------------------------------------------------------
# Throughput of forwards while another thread synchronizes the device in a loop (issue 18,
# hazard 2: a device-wide synchronize that holds every stream's queue while it waits makes the
# other threads run in lockstep with it).


def timed_forwards(work, threads, iters, timeout, sync=None):
    """Every thread runs iters forwards of work (a ModelWork), each read back to the host as a
    server would; with sync, one more thread calls sync() in a loop from the common start
    until the last worker is done (at least once).

    Returns (outputs by thread on the CPU, wall seconds from the first worker's start to the
    last one's end, number of sync() calls)."""
    done = threading.Event()
    left = [threads]
    lock = threading.Lock()

    def worker(tid):
        try:
            model, xs = work.model(tid), work.inputs(tid)
            start = time.perf_counter()
            outs = [M.forward(model, xs[i % len(xs)]).cpu() for i in range(iters)]
            return outs, start, time.perf_counter()
        finally:
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

    def syncer():
        calls = 0
        while True:
            sync()
            calls += 1
            if done.is_set():
                return calls

    n = threads + (1 if sync is not None else 0)
    out = H.run_threads(n, lambda tid: worker(tid) if tid < threads else syncer(), timeout)
    rows = out[:threads]
    wall = max(r[2] for r in rows) - min(r[1] for r in rows)
    return [r[0] for r in rows], wall, (out[threads] if sync is not None else 0)


# ---------------------------------------------------------------------------------------------
# Event objects reused across threads (issue 18, hazard 3: a pooled event's counter reset on
# reuse while an old signal may still land; elapsed_time waiting for a notification that cannot
# come after the end event was synchronized).

EVENT_REUSE_MODES = ("recycled", "churn")
_CONSUMER_FAILED = object()
EVENT_CHECKS = ("wait", "synchronize", "query")


class EventReuse:
    """Producer/consumer pairs hand work over with a start and an end event per round.

    recycled  each pair owns a few (start, end) event pairs, made once; the producer takes one
              from a free queue, records it around its work, hands it to the consumer, which
              gives it back: the same event objects are recorded again and again, sometimes
              while a wait on their previous record is still queued.
    churn     fresh events every round, dropped by the consumer as soon as it is done with
              them (the device's event pool hands their slots out again).

    The consumer checks round i with EVENT_CHECKS[i % 3]:
      wait         end.wait(), queue work on the output, hand the events back, then read: the
                   derived result must be exact;
      synchronize  end.synchronize(); end.query() must be true; start.elapsed_time(end) must be
                   finite, not negative and within the host-measured interval around it;
      query        poll end.query() until true, then read the output.
    make is a factory of events (suite_harness.device_events), or None: then nothing is
    recorded and only the hand-off of the outputs is checked.
    """

    tol = H.EXACT

    def __init__(self, device, make, size, steps, rounds, pool, mode):
        if mode not in EVENT_REUSE_MODES:
            raise ValueError("unknown event reuse mode %r (have %s)" % (
                mode, ", ".join(EVENT_REUSE_MODES)))
        self.device = device
        self.make = make
        self.size = size
        self.steps = steps
        self.rounds = rounds
        self.pool = pool
        self.mode = mode
        self._w = {}

    def weight(self, pid, device=None):
        device = device or self.device
        if (pid, device) not in self._w:
            self._w[(pid, device)] = int_matrix(self.size, 14000 + pid, device)
        return self._w[(pid, device)]

    def host_input(self, pid, i):
        return int_matrix(self.size, 15000 + 1000 * pid + i, "cpu")

    @staticmethod
    def derive(y, pid):
        return int_reduce(y * 2 + (pid % 3))

    def reference(self, pairs):
        """{(pid, i): (output, derived)} on the CPU."""
        refs = {}
        for pid in range(pairs):
            w = self.weight(pid, "cpu")
            for i in range(self.rounds):
                y = busy_chain(self.host_input(pid, i), w, self.steps)
                refs[(pid, i)] = (y, self.derive(y, pid))
        return refs

    def compute(self, x, w):
        """The producer's work between its start and end records."""
        return busy_chain(x, w, self.steps)

    def new_pair(self):
        if self.make is None:
            return None, None
        return self.make(True), self.make(True)

    def free_queue(self):
        """The recycled pool of one pair: pool (start, end) event pairs made once."""
        free = queue.Queue()
        for _ in range(self.pool):
            free.put(self.new_pair())
        return free

    def produce(self, pid, handoff, free, timeout, stream):
        w = self.weight(pid)
        try:
            with stream():
                for i in range(self.rounds):
                    pair = free.get(timeout=timeout) if self.mode == "recycled" \
                        else self.new_pair()
                    if pair is _CONSUMER_FAILED:
                        return
                    start, end = pair
                    x = self.host_input(pid, i).to(self.device)
                    t0 = time.perf_counter()
                    if start is not None:
                        start.record()
                    y = self.compute(x, w)
                    if end is not None:
                        end.record()
                    handoff.put((i, y, start, end, t0))
                    del pair, start, end, x, y  # churn: the consumer holds the only references
        finally:
            handoff.put(None)  # also after a failure: the consumer must not wait for ever

    def consume(self, pid, handoff, free, timeout, stream):
        try:
            return self._consume(pid, handoff, free, timeout, stream)
        except BaseException:
            if free is not None:
                free.put(_CONSUMER_FAILED)  # the producer must not wait for events for ever
            raise

    def _consume(self, pid, handoff, free, timeout, stream):
        out = {}

        def give_back(start, end):
            if self.mode == "recycled":
                free.put((start, end))

        with stream():
            while True:
                item = handoff.get(timeout=timeout)
                if item is None:
                    return out
                i, y, start, end, t0 = item
                item = None
                check = EVENT_CHECKS[i % len(EVENT_CHECKS)]
                queried, elapsed, wall = True, None, None
                if end is None:
                    give_back(start, end)
                    derived = self.derive(y, pid)
                elif check == "wait":
                    end.wait()
                    derived = self.derive(y, pid)
                    # Handed back while the wait may still be queued: the producer may record
                    # these events again before this thread's stream has passed the wait.
                    give_back(start, end)
                elif check == "synchronize":
                    end.synchronize()
                    queried = bool(end.query())
                    wall = (time.perf_counter() - t0) * 1000.0
                    elapsed = start.elapsed_time(end)
                    give_back(start, end)
                    derived = self.derive(y, pid)
                else:
                    deadline = time.monotonic() + timeout
                    while not end.query():
                        if time.monotonic() > deadline:
                            raise RuntimeError("round %d: end.query() still false after %.0fs" % (
                                i, timeout))
                        time.sleep(0.0005)
                    give_back(start, end)
                    derived = self.derive(y, pid)
                del start, end
                out[i] = (y.cpu(), derived.cpu(), check, queried, elapsed, wall)
                del y, derived

    def run(self, pairs, timeout, stream):
        """pairs producer/consumer pairs at once; stream() is the context each thread runs in
        (suite_harness.thread_stream on CUDA). Returns {(pid, i): consumer's row}."""
        handoffs = [queue.Queue() for _ in range(pairs)]
        frees = [self.free_queue() if self.mode == "recycled" else None for _ in range(pairs)]

        def body(tid):
            if tid < pairs:
                return self.produce(tid, handoffs[tid], frees[tid], timeout, stream)
            pid = tid - pairs
            return self.consume(pid, handoffs[pid], frees[pid], timeout, stream)

        out = H.run_threads(2 * pairs, body, timeout)
        return {(pid, i): row for pid, rows in enumerate(out[pairs:]) for i, row in rows.items()}

    def check(self, results, refs, slack_ms):
        """Exact outputs and derived results; with events, query() after synchronize() and
        possible elapsed times. Returns the elapsed times (ms) for the report."""
        bad, elapsed = [], []
        for key in sorted(refs):
            if key not in results:
                bad.append("pair %d round %d: never consumed" % key)
                continue
            y, d, check, queried, ms, wall = results[key]
            want_y, want_d = refs[key]
            what = "pair %d round %d (%s)" % (key + (check,))
            msg = H.compare(y, want_y, self.tol, "%s output" % what) or \
                H.compare(d, want_d, self.tol, "%s derived on the consumer" % what)
            if msg is None and not queried:
                msg = "%s: end.query() false after end.synchronize()" % what
            if msg is None and wall is not None:
                problem = H.elapsed_problem(ms, wall, slack_ms)
                if problem:
                    msg = "%s: %s" % (what, problem)
                else:
                    elapsed.append(ms)
            if msg:
                bad.append(msg)
        if bad:
            raise AssertionError("%d of %d event hand-offs wrong (%s); first: %s" % (
                len(bad), len(refs), self.mode, bad[0]))
        return elapsed

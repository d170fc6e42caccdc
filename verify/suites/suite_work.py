"""Workloads: what one thread does, deterministic given its thread id.

Each workload's run(tid, iters) returns the list of outputs of that thread. The same call made
single-threaded before the threads start is the reference its concurrent run must reproduce
(see suite_harness.compare for the tolerances).
"""

import copy

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

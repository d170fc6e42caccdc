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

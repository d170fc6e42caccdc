"""Backward with hooks from several threads against the same computation from one thread
(issue 18, hazard 8: with a stream per thread, backward on the autograd device thread ran on a
stream of its own, unordered with the forward that made its inputs).

Each step: a forward of a small MLP whose modules carry hooks that change the numbers, then
torch.autograd.grad of a weighted sum with respect to every parameter and the input:

  fc1  forward pre-hook: the input doubled
  fc2  forward hook: the output plus 0.25, with a tensor hook on it that triples its gradient;
       full backward pre-hook (torch 2.0+): the gradient of the output times 1.5
  fc3  full backward hook: the gradient of its input halved
  out  a tensor hook on the model's output records the gradient it sees

On CUDA and MPS the backward (and every backward hook) runs on the device's autograd thread,
not on the thread that called it. Gradients, outputs and the recorded gradient of every step of
every thread must match the single-threaded run (suite_harness.MODEL_TOL), which must itself
match the same computation on the CPU (CROSS_TOL: other kernels), and every hook must have run
exactly once per step. sharing: one model for all threads (its hooks run for every thread), or
one model per thread.
"""

import threading

import pytest
import torch
import torch.nn as nn

import suite_harness as H

IN, HIDDEN, OUT = 32, 64, 16


class HookedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, OUT)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


class HookCounts:
    """How many times each hook ran (hooks of a shared model run on many threads)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.counts = {}

    def add(self, key):
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def take(self):
        with self._lock:
            out, self.counts = self.counts, {}
        return out


def _scale_grads(grads, factor):
    return tuple(None if g is None else g * factor for g in grads)


def build_hooked(seed, device, counts):
    """A HookedMLP with weights from seed, hooks installed, on device. Returns (model, the hook
    kinds it counts per step)."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = HookedMLP()
    finally:
        torch.random.set_rng_state(state)
    model = model.to(device)

    def pre(module, args):
        return (args[0] * 2,)

    def post(module, args, out):
        counts.add("forward")
        out = out + 0.25
        out.register_hook(lambda g: g * 3)
        return out

    def backward(module, grad_input, grad_output):
        counts.add("backward")
        return _scale_grads(grad_input, 0.5)

    def backward_pre(module, grad_output):
        counts.add("backward_pre")
        return _scale_grads(grad_output, 1.5)

    kinds = ["forward", "backward"]
    model.fc1.register_forward_pre_hook(pre)
    model.fc2.register_forward_hook(post)
    model.fc3.register_full_backward_hook(backward)
    if hasattr(model.fc2, "register_full_backward_pre_hook"):  # torch 2.0+
        model.fc2.register_full_backward_pre_hook(backward_pre)
        kinds.append("backward_pre")
    return model, kinds


class HookedBackward:
    """Steps of one thread: inputs and output weights from seeds, on device."""

    tol = H.MODEL_TOL

    def __init__(self, device, sharing, threads, batch):
        if sharing not in ("shared", "per-thread"):
            raise ValueError("unknown sharing %r" % sharing)
        self.device = device
        self.sharing = sharing
        self.counts = [HookCounts() for _ in range(1 if sharing == "shared" else threads)]
        self.models = []
        for i, counts in enumerate(self.counts):
            model, self.kinds = build_hooked(300 + i, device, counts)
            self.models.append(model)
        self.data = {}
        for tid in range(threads):
            rows = []
            for j in range(3):
                gen = torch.Generator().manual_seed(18000 + 7 * tid + j)
                rows.append((torch.randn(batch, IN, generator=gen).to(device),
                             torch.randn(batch, OUT, generator=gen).to(device)))
            self.data[tid] = rows

    def model(self, tid):
        return self.models[0 if self.sharing == "shared" else tid]

    def run(self, tid, iters):
        model = self.model(tid)
        params = list(model.parameters())
        outs = []
        for i in range(iters):
            x0, t = self.data[tid][i % 3]
            x = x0.detach().clone().requires_grad_(True)
            seen = []
            y = model(x)
            y.register_hook(lambda g: seen.append(g.detach().clone()))
            grads = torch.autograd.grad((y * t).sum(), params + [x])
            if len(seen) != 1:
                raise RuntimeError("the output's tensor hook ran %d times in one backward" %
                                   len(seen))
            outs.append([g.detach() for g in grads] + [seen[0], y.detach()])
        return outs

    def reference(self, threads, iters):
        return [[[t.cpu() for t in step] for step in self.run(tid, iters)]
                for tid in range(threads)]

    def hook_problems(self, threads, iters, when):
        """Every hook once per step: threads * iters calls on a shared model, iters on each
        per-thread model."""
        bad = []
        for i, counts in enumerate(self.counts):
            have = counts.take()
            want = threads * iters if self.sharing == "shared" else iters
            for kind in self.kinds:
                if have.get(kind, 0) != want:
                    bad.append("%s: %s hook of model %d ran %d times, want %d" % (
                        when, kind, i, have.get(kind, 0), want))
        return bad


@pytest.mark.parametrize("sharing", ["shared", "per-thread"])
def test_backward_hooks(settings, threads, sharing, note):
    iters = settings["hook_iters"]
    work = HookedBackward(settings.device, sharing, threads, settings["batch"])
    if "backward_pre" not in work.kinds:
        note("not checked", "full backward pre-hooks: absent in torch %s (2.0+)" %
             torch.__version__)
    refs = work.reference(threads, iters)
    bad = work.hook_problems(threads, iters, "one thread")
    assert not bad, "; ".join(bad)
    if settings.device != "cpu":
        cpu = HookedBackward("cpu", sharing, threads, settings["batch"])
        want = cpu.reference(threads, iters)
        try:
            H.check_threads(refs, want, H.CROSS_TOL)
        except AssertionError as exc:
            raise AssertionError("single-threaded backward with hooks on %s differs from the "
                                 "cpu: %s" % (settings.device, exc))
    results = H.run_threads(threads, lambda tid: work.run(tid, iters), settings["join_timeout"])
    H.check_threads(results, refs, work.tol)
    bad = work.hook_problems(threads, iters, "%d threads" % threads)
    assert not bad, "; ".join(bad)

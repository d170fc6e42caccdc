"""One linear layer written four ways, run side by side (seed: F.linear and nn.Linear crashed
at 2-3 threads while addmm and x @ w.T + b passed, on both the graph and the no-graph path).

path "default" uses contiguous tensors; on MPS in v2.9.1 that is Linear.mm's no-graph
MPSNDArrayMatrixMultiplication path (macOS 15+). path "graph" uses a non-contiguous weight
view, which Linear.mm always sends through MPSGraph. On CUDA and CPU there is one path: both
parametrizations run the same kernels and the distinction does not apply. A patch may also
add an environment knob (MPS_FORCE_GRAPH_PATH in the seeds); the runner sets it for a whole
run, since such knobs are read once per process.

Issue 18, hazard 7: test_linear_zero_in_features (in_features == 0 returns the bias broadcast,
or zeros, as on the CPU) and test_linear_low_precision (float16 and bfloat16 against a float32
CPU reference, within a derived bound), each from one thread and then from every thread at once.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import suite_harness as H
import suite_models as M
import suite_work as W

VARIANTS = M.LINEAR_VARIANTS + ("mixed",)


@pytest.mark.parametrize("path", M.LINEAR_PATHS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_linear_variants(settings, threads, variant, path, request):
    # Only MPS has two linear paths; elsewhere both parametrizations run the same kernels.
    request.node.user_properties.append(("linear_paths_differ", settings.device == "mps"))
    work = W.LinearWork(settings.device, variant=variant, path=path, batch=settings["batch"])
    # The four formulations must agree with each other before concurrency is even tried.
    x = work.inputs(0)[0]
    want = M.linear_apply("f_linear", work.params, x)
    for other in M.LINEAR_VARIANTS:
        msg = H.compare(M.linear_apply(other, work.params, x), want, H.CROSS_TOL,
                        "%s against f_linear" % other)
        assert msg is None, msg
    W.run_and_check(work, threads, settings["iters"] * 2, settings["join_timeout"])


# ---------------------------------------------------------------------------------------------
# Linear's edge case and precision (issue 18, hazard 7): the second pass made Linear.mm throw
# for in_features == 0, where the CPU returns the bias broadcast (zeros without a bias), and ran
# every contiguous Linear as mm then add, rounding fp16/bf16 twice. Both are checked against
# the CPU, first from one thread, then from every thread at once.

ZERO_IN_SHAPES = ((4, 0), (2, 3, 0))


class _ZeroIn:
    """Per thread: F.linear and nn.Linear(0, out) on inputs with no features, 2-D and 3-D."""

    def __init__(self, device, threads, bias):
        self.device = device
        self.cases = {}
        for tid in range(threads):
            gen = torch.Generator().manual_seed(16000 + tid)
            out = 5 + tid % 3
            b = torch.randn(out, generator=gen) if bias else None
            w = torch.empty(out, 0)
            with warnings.catch_warnings():  # "Initializing zero-element tensors is a no-op"
                warnings.simplefilter("ignore")
                module = torch.nn.Linear(0, out, bias=bias)
            with torch.no_grad():
                module.weight = torch.nn.Parameter(w.clone(), requires_grad=False)
                if bias:
                    module.bias = torch.nn.Parameter(b.clone(), requires_grad=False)
            module = module.to(device).eval()
            xs = [torch.empty(shape) for shape in ZERO_IN_SHAPES]
            refs = []
            for x in xs:
                ref = F.linear(x, w, b)
                want = b.expand(x.shape[:-1] + (out,)) if bias else torch.zeros(x.shape[:-1] + (out,))
                msg = H.compare(ref, want, H.EXACT, "cpu reference")
                assert msg is None, "the CPU itself does not return the bias: %s" % msg
                refs += [ref, ref]
            dev = (w.to(device), None if b is None else b.to(device))
            self.cases[tid] = ([x.to(device) for x in xs], dev, module, refs)

    def run(self, tid, iters=1):
        xs, (w, b), module, _ = self.cases[tid]
        outs = []
        with torch.no_grad():
            for _ in range(iters):
                for x in xs:
                    outs += [F.linear(x, w, b), module(x)]
        return outs

    def refs(self, tid, iters=1):
        return self.cases[tid][3] * iters


@pytest.mark.parametrize("bias", ["bias", "nobias"])
def test_linear_zero_in_features(settings, threads, bias):
    work = _ZeroIn(settings.device, threads, bias == "bias")
    iters = settings["iters"]
    for tid in range(threads):  # one thread first: a raise here is a wrong answer, not a crash
        try:
            have = work.run(tid)
        except RuntimeError as exc:
            raise AssertionError("Linear with in_features == 0 raised on %s where the CPU "
                                 "returns %s: %s" % (settings.device, "the bias broadcast" if
                                                     bias == "bias" else "zeros",
                                                     H.first_line(exc)))
        msg = H.compare(have, work.refs(tid), H.EXACT, "thread %d alone" % tid)
        assert msg is None, "Linear with in_features == 0: %s" % msg
    results = H.run_threads(threads, lambda tid: work.run(tid, iters), settings["join_timeout"])
    H.check_threads(results, [work.refs(tid, iters) for tid in range(threads)], H.EXACT)


LOW_PRECISION = ("float16", "bfloat16")
LOW_PRECISION_CASES = ("f_linear", "no_bias", "module", "batched", "strided_weight")
LP_IN, LP_OUT = 32, 24


class _LowPrecision:
    """Per thread, every case of LOW_PRECISION_CASES on inputs rounded to dtype, with its
    float32 CPU reference and scale."""

    def __init__(self, device, dtype, threads):
        self.dtype = dtype
        self.cases = {}
        for tid in range(threads):
            rows = []
            for c, case in enumerate(LOW_PRECISION_CASES):
                gen = torch.Generator().manual_seed(17000 + 31 * tid + c)
                shape = (2, 3, LP_IN) if case == "batched" else (4, LP_IN)
                x = torch.randn(shape, generator=gen).to(dtype)
                w = (torch.randn(LP_OUT, LP_IN, generator=gen) / LP_IN ** 0.5).to(dtype)
                b = None if case == "no_bias" else torch.randn(LP_OUT, generator=gen).to(dtype)
                ref = F.linear(x.float(), w.float(), None if b is None else b.float())
                scale = F.linear(x.float().abs(), w.float().abs(),
                                 None if b is None else b.float().abs())
                # strided_weight: same values, stored transposed (Linear.mm's graph path on MPS)
                wd = w.t().contiguous().to(device).t() if case == "strided_weight" \
                    else w.to(device)
                bd = None if b is None else b.to(device)
                module = None
                if case == "module":
                    module = torch.nn.Linear(LP_IN, LP_OUT)
                    module.weight = torch.nn.Parameter(wd, requires_grad=False)
                    module.bias = torch.nn.Parameter(bd, requires_grad=False)
                rows.append((case, x.to(device), wd, bd, module, ref, scale))
            self.cases[tid] = rows

    def run(self, tid, iters=1):
        outs = []
        with torch.no_grad():
            for _ in range(iters):
                for _, x, w, b, module, _, _ in self.cases[tid]:
                    outs.append(module(x) if module is not None else F.linear(x, w, b))
        return outs

    def problems(self, tid, outs, who):
        rows = self.cases[tid]
        bad = []
        for i, have in enumerate(outs):
            case, _, _, _, _, ref, scale = rows[i % len(rows)]
            msg = H.low_precision_problem(torch, have, ref, scale, self.dtype, LP_IN,
                                          "%s, %s" % (who, case))
            if msg:
                bad.append(msg)
        return bad


def _low_precision_lack(device, dtype):
    """Why device cannot run Linear in dtype at all, or None. Only a missing capability skips:
    the dtype cannot be made on the device (bfloat16 on MPS before macOS 14), or the CPU (the
    control, not the device under test) has no matmul kernel for it (float16 in torch 1.13)."""
    try:
        torch.zeros(1, dtype=dtype, device=device)
    except (RuntimeError, TypeError) as exc:
        return "%s tensors cannot be made on %s: %s" % (dtype, device, H.first_line(exc))
    if device == "cpu":
        try:
            F.linear(torch.ones(1, 1, dtype=dtype), torch.ones(1, 1, dtype=dtype))
        except RuntimeError as exc:
            return "the cpu in torch %s has no %s matmul: %s" % (
                torch.__version__, dtype, H.first_line(exc))
    return None


@pytest.mark.parametrize("dtype_name", LOW_PRECISION)
def test_linear_low_precision(settings, threads, dtype_name, note):
    dtype = getattr(torch, dtype_name)
    lack = _low_precision_lack(settings.device, dtype)
    if lack:
        pytest.skip("not checked: %s Linear against the float32 CPU reference: %s" % (
            dtype_name, lack))
    work = _LowPrecision(settings.device, dtype, threads)
    bad, off, count, worst = [], 0, 0, 0.0
    for tid in range(threads):  # one thread first
        outs = work.run(tid)
        bad += work.problems(tid, outs, "thread %d alone" % tid)
        for have, row in zip(outs, work.cases[tid]):
            o, n, e = H.rounding_stats(torch, have, row[5], row[6], dtype)
            off, count, worst = off + o, count + n, max(worst, e)
    assert not bad, "%d of %d Linear outputs in %s from one thread beyond the bound; first: %s" % (
        len(bad), threads * len(LOW_PRECISION_CASES), dtype_name, bad[0])
    note("rounding", "%s, one thread: %d of %d elements not the correctly rounded float32 "
                     "result; largest error %.2f u*scale (the bound allows %.1f)" % (
                         dtype_name, off, count, worst,
                         H.gamma(LP_IN + 2, H.unit_roundoff(torch, dtype)) /
                         H.unit_roundoff(torch, dtype)))
    iters = settings["iters"]
    results = H.run_threads(threads, lambda tid: work.run(tid, iters), settings["join_timeout"])
    for tid, outs in enumerate(results):
        bad += work.problems(tid, outs, "thread %d of %d" % (tid, threads))
    assert not bad, "%d of %d Linear outputs in %s from %d threads at once beyond the bound; " \
        "first: %s" % (len(bad), threads * iters * len(LOW_PRECISION_CASES), dtype_name,
                       threads, bad[0])

"""One linear layer written four ways, run side by side (seed: F.linear and nn.Linear crashed
at 2-3 threads while addmm and x @ w.T + b passed, on both the graph and the no-graph path).

path "default" uses contiguous tensors; on MPS in v2.9.1 that is Linear.mm's no-graph
MPSNDArrayMatrixMultiplication path (macOS 15+). path "graph" uses a non-contiguous weight
view, which Linear.mm always sends through MPSGraph. On CUDA and CPU there is one path: both
parametrizations run the same kernels and the distinction does not apply. A patch may also
add an environment knob (MPS_FORCE_GRAPH_PATH in the seeds); the runner sets it for a whole
run, since such knobs are read once per process.
"""

import pytest

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

"""Cold and warm start (seeds: "main thread must initialise MPS before spawning workers";
"a warmup step is required for stability").

Cold start needs a process in which nothing has run on the device yet, and pytest's process
has already run other tests: test_cold_start therefore starts a fresh python (suite_child.py)
whose threads do their first device work together behind a barrier, and compares what they
computed with a reference this process computed beforehand from the same seeds.

  first-touch  the child's main thread never touches the device: each thread moves its own
               copy of every model and its inputs to the device, then runs the first forward
  init-only    the child's main thread does the seeds' workaround only (torch.zeros(1) on the
               device and a synchronize) and moves shared models there; threads then run the
               first forward of every model together (kernel and graph caches still cold)

test_two_phase_first_use (issue 7) also starts a fresh python: many threads hit the first use of
several kinds of op together, then do steady work together.

Warm start runs in-process: a single-threaded warm-up with the exact ops and shapes, then the
threads together.
"""

import os

import pytest

import suite_harness as H
import suite_models as M
import suite_work as W

COLD_MODELS = list(M.MODEL_NAMES)


def _reference(device, n, batch):
    refs = []
    for tid in range(n):
        outs = {}
        for m in COLD_MODELS:
            model = M.build_model(m, 100, device)
            x = M.model_input(m, batch, 500 + tid, "cpu").to(device)
            outs[m] = M.forward(model, x).cpu()
        refs.append(outs)
    return refs


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", ["first-touch", "init-only"])
def test_cold_start(settings, mode, tmp_path):
    import torch

    n = settings["cold_threads"]
    if settings.override:
        n = max(settings.override)
    batch = settings["batch"]
    refs = _reference(settings.device, n, batch)
    out = str(tmp_path / "cold.pt")
    child = H.run_child({"cmd": "cold", "device": settings.device, "mode": mode, "threads": n,
                         "models": COLD_MODELS, "batch": batch, "out": out,
                         "timeout": settings["join_timeout"]}, settings["child_timeout"])
    if not child.ok:
        raise H.ThreadsFailed("cold start (%s, %d threads): %s" % (mode, n, child.why()))
    assert os.path.exists(out), "child exited 0 without writing %s" % out
    results = torch.load(out)
    have = [[r[m] for m in COLD_MODELS] for r in results]
    want = [[r[m] for m in COLD_MODELS] for r in refs]
    H.check_threads(have, want, H.MODEL_TOL)


@pytest.mark.parametrize("model", M.MODEL_NAMES + ("f_linear",))
def test_warm_start(settings, threads, model):
    if model == "f_linear":
        work = W.LinearWork(settings.device, "f_linear", batch=settings["batch"])
    else:
        work = W.ModelWork(settings.device, model, "shared", batch=settings["batch"])
        work.prepare(threads)
    # Warm-up: thread 0's first forward, single-threaded, exact ops and shapes.
    work.run(0, 1)
    settings.sync()
    W.run_and_check(work, threads, settings["iters"], settings["join_timeout"])


@pytest.mark.subprocess
def test_two_phase_first_use(settings, tmp_path):
    """Two-phase start in a fresh process (issue 7: many threads hit first-use initialisation
    together). Phase 1: the child's main thread never touches the device; first_use_threads
    threads (16 quick, 32 full) pass a barrier and each runs one op of every kind in
    suite_work.FIRST_USE_KINDS, thread i starting with kind i % K, so that every kind's lazy
    initialisation (device generator, copies, matmul kernels, MPSGraph ops, range/eye
    factories, renorm, synchronize) is first hit by several threads at once. Phase 2, behind a
    second barrier: steady model work (each thread its own copy of one of the four models,
    first_use_iters forwards). Both phases are compared with this process's single-threaded
    reference under the model tolerance (the integer-valued matmul and the seeded randn are
    bitwise equal in practice; linear, conv and norm may pick other kernels per call)."""
    import torch

    n = settings["first_use_threads"]
    if settings.override:
        n = max(settings.override)
    iters, batch = settings["first_use_iters"], settings["batch"]
    want_first = [W.first_use_all(tid, settings.device) for tid in range(n)]
    steady = W.ModelWork(settings.device, "mixed", batch=batch)
    steady.prepare(n)
    want_steady = steady.reference(n, iters)
    out = str(tmp_path / "twophase.pt")
    child = H.run_child({"cmd": "twophase", "device": settings.device, "threads": n,
                         "iters": iters, "batch": batch, "out": out,
                         "timeout": settings["join_timeout"]}, settings["child_timeout"])
    if not child.ok:
        raise H.ThreadsFailed("two-phase start (%d threads): %s" % (n, child.why()))
    assert os.path.exists(out), "child exited 0 without writing %s" % out
    results = torch.load(out)
    kinds = W.FIRST_USE_KINDS
    H.check_threads([[r[0][k] for k in kinds] for r in results],
                    [[w[k] for k in kinds] for w in want_first], H.MODEL_TOL,
                    what="phase-1 thread")
    H.check_threads([r[1] for r in results], want_steady, H.MODEL_TOL, what="phase-2 thread")

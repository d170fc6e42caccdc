"""Multi-process against multi-thread at the same total concurrency (seed: 8 processes ran
nn.Linear where 3+ threads crashed). N fresh processes with one thread each and one fresh
process with N threads run the same model workload with the same global thread ids; all start
together behind a file barrier after a single-threaded warm-up, and every output is checked
against this process's single-threaded reference. The wall times are reported (as the test's
user properties), never asserted."""

import os

import pytest

import suite_harness as H
import suite_work as W


def _launch(settings, tmp_path, tag, procs, per_proc, model, iters):
    ready = str(tmp_path / ("%s.ready" % tag))
    go = str(tmp_path / ("%s.go" % tag))
    children = []
    for p in range(procs):
        out = str(tmp_path / ("%s.%d.pt" % (tag, p)))
        req = {"cmd": "work", "device": settings.device, "model": model, "threads": per_proc,
               "first_tid": p * per_proc, "iters": iters, "batch": settings["batch"],
               "ready": ready, "go": go, "out": out, "timeout": settings["child_timeout"]}
        children.append((p, out, H.start_child(req)))
    return ready, go, children


def _run(settings, tmp_path, tag, procs, per_proc, model, iters):
    import time

    import torch

    ready, go, children = _launch(settings, tmp_path, tag, procs, per_proc, model, iters)
    deadline = time.monotonic() + settings["child_timeout"]
    want = {"%s.%d" % (ready, p * per_proc) for p in range(procs)}
    while not all(os.path.exists(w) for w in want):
        dead = [c for c in children if c[2].poll() is not None]
        if dead or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    with open(go, "w"):
        pass
    # Reap every child before judging any, so that none outlives the test.
    finished = [(p, out, H.finish_child(proc, settings["child_timeout"]))
                for p, out, proc in children]
    results, walls = [], []
    for p, out, res in finished:
        if not res.ok:
            raise H.ThreadsFailed("%s: process %d of %d: %s" % (tag, p, procs, res.why()))
        results.extend(torch.load(out))
        walls.append(next((l["wall"] for l in res.lines if "wall" in l), float("nan")))
    return results, max(walls)


@pytest.mark.subprocess
@pytest.mark.parametrize("model", ["mlp", "transformer"])
def test_process_vs_thread(settings, model, tmp_path, request):
    n = settings["mp_workers"]
    if settings.override:
        n = max(settings.override)
    iters = settings["mp_iters"]
    work = W.ModelWork(settings.device, model, "shared", batch=settings["batch"])
    work.prepare(n)
    refs = work.reference(n, iters)
    by_proc, wall_p = _run(settings, tmp_path, "procs", n, 1, model, iters)
    by_thread, wall_t = _run(settings, tmp_path, "threads", 1, n, model, iters)
    request.node.user_properties.extend([
        ("processes_wall_s", round(wall_p, 4)), ("threads_wall_s", round(wall_t, 4)),
        ("forwards", n * iters)])
    H.check_threads(by_proc, refs, work.tol, what="process")
    H.check_threads(by_thread, refs, work.tol, what="thread")

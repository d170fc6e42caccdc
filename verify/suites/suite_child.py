"""Entry point of the fresh python processes some suites start.

    python suite_child.py '<json request>'

A fresh process is the only way to get a truly cold start (nothing initialised on the device)
and the only way to survive a crash: a segfault kills the child, and the parent records how far
it got from the lines the child printed (one JSON object per line, flushed) before it died.

Commands (request["cmd"]):
  cold      all threads do their first device work together; outputs saved with torch.save
  work      run a model workload on k threads after a file barrier shared with sibling
            processes; outputs and timing saved (multi-process vs multi-thread)
  twophase  all threads do their first device work together, each starting with a different
            kind of op (suite_work.FIRST_USE_KINDS); then, behind a second barrier, steady
            model work; both phases' outputs saved with torch.save
  boundary  for each thread count in turn, run an op class on that many threads and print
            {"threads": n, "ok": bool, "message": ...}; stop at the first failure
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def cold(req):
    import copy

    import torch

    import suite_harness as H
    import suite_models as M

    device, n, names = req["device"], req["threads"], req["models"]
    if req["mode"] == "init-only":
        # The seeds' workaround: touch the device once on the main thread, nothing more.
        torch.zeros(1, device=device)
        H.synchronize(torch, device)
        shared = {m: M.build_model(m, 100, device) for m in names}
    elif req["mode"] == "first-touch":
        shared = None  # nothing reaches the device before the barrier
    else:
        raise ValueError("unknown cold mode %r" % req["mode"])
    cpu_models = {m: M.build_model(m, 100, "cpu") for m in names}
    cpu_inputs = {(m, t): M.model_input(m, req["batch"], 500 + t, "cpu")
                  for m in names for t in range(n)}

    def worker(tid):
        outs = {}
        for m in names:
            if shared is None:
                model = copy.deepcopy(cpu_models[m]).to(device)
            else:
                model = shared[m]
            x = cpu_inputs[(m, tid)].to(device)
            outs[m] = M.forward(model, x).cpu()
        return outs

    results = H.run_threads(n, worker, req["timeout"])
    torch.save(results, req["out"])
    say({"ok": True})


def twophase(req):
    import copy
    import threading

    import torch

    import suite_harness as H
    import suite_models as M
    import suite_work as W

    device, n, iters, timeout = req["device"], req["threads"], req["iters"], req["timeout"]
    # Nothing reaches the device before the first barrier: phase 2's models and inputs are made
    # on the CPU, and each thread moves its own copy there after its first-use phase.
    steady = W.ModelWork("cpu", "mixed", batch=req["batch"])
    steady.prepare(n)
    second = threading.Barrier(n)

    def worker(tid):
        first = W.first_use_all(tid, device)  # phase 1: every thread's first ops, together
        second.wait(timeout)                  # phase 2: steady work, together
        model = copy.deepcopy(steady.model(tid)).to(device)
        xs = [x.to(device) for x in steady.inputs(tid)]
        outs = [M.forward(model, xs[i % len(xs)]).cpu() for i in range(iters)]
        return first, outs

    results = H.run_threads(n, worker, timeout)
    torch.save(results, req["out"])
    say({"ok": True})


def work(req):
    import torch

    import suite_harness as H
    import suite_work as W

    device, k, iters = req["device"], req["threads"], req["iters"]
    wl = W.ModelWork(device, req["model"], "shared", batch=req["batch"])
    # Thread ids are global across processes: process p runs ids first..first+k-1.
    first = req["first_tid"]
    wl.prepare(first + k)
    wl.run(first, 1)  # single-threaded warm-up of the exact ops and shapes
    H.synchronize(torch, device)
    with open(req["ready"] + ".%d" % first, "w"):
        pass
    deadline = time.monotonic() + req["timeout"]
    while not os.path.exists(req["go"]):
        if time.monotonic() > deadline:
            raise RuntimeError("no go signal within %ss" % req["timeout"])
        time.sleep(0.002)
    t0 = time.perf_counter()
    results = H.run_threads(k, lambda i: wl.run(first + i, iters), req["timeout"])
    H.synchronize(torch, device)
    wall = time.perf_counter() - t0
    torch.save([[t.cpu() for t in r] for r in results], req["out"])
    say({"ok": True, "wall": wall})


def boundary(req):
    import torch

    import suite_harness as H
    import suite_work as W

    device, iters = req["device"], req["iters"]
    counts = req["counts"]
    wl = W.boundary_workload(req["op"], device, req["knobs"])
    top = max(counts)
    if hasattr(wl, "prepare"):
        wl.prepare(top)
    refs = wl.reference(top, iters)
    H.synchronize(torch, device)
    for n in counts:
        try:
            results = H.run_threads(n, lambda tid: wl.run(tid, iters), req["timeout"])
            H.check_threads(results, refs[:n], wl.tol)
        except Exception as exc:  # noqa: BLE001 - the outcome is the answer
            say({"threads": n, "ok": False,
                 "message": "%s: %s" % (type(exc).__name__, H.first_line(exc))})
            return
        say({"threads": n, "ok": True, "message": ""})


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: suite_child.py '<json request>'\n")
        return 2
    req = json.loads(argv[1])
    {"cold": cold, "work": work, "twophase": twophase, "boundary": boundary}[req["cmd"]](req)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Thread lifecycle: churn (threads come and go), over-subscription (more threads than the
MPS stream pool has streams) and synchronize() from one thread while others work. Seeds: the
"Over-Subscription Detection" and "Thread Churn (Freelist)" tests; off-queue synchronize()
fixed by syncing the current stream. test_thread_start_end_memory measures what threads that
come and go cost in memory (issue 7, hazard 6)."""

import threading

import suite_harness as H
import suite_models as M
import suite_work as W


def test_thread_churn(settings):
    """Round after round of fresh threads (new thread ids, new thread-local state, streams
    returned to the pool and handed out again), each checked against its reference."""
    rounds, n = settings["churn_rounds"], settings["churn_threads"]
    if settings.override:
        n = max(settings.override)
    work = W.ModelWork(settings.device, "mixed", batch=settings["batch"])
    work.prepare(n)
    iters = 2
    refs = work.reference(n, iters)
    for r in range(rounds):
        results = H.run_threads(n, lambda tid: work.run(tid, iters), settings["join_timeout"])
        try:
            H.check_threads(results, refs, work.tol)
        except AssertionError as exc:
            raise AssertionError("round %d of %d: %s" % (r + 1, rounds, exc))
        del results


def test_oversubscription(settings):
    """32 threads (64 in full) at once, beyond the 32-stream pool of the patched MPS backend:
    late threads must share streams, not crash or corrupt each other."""
    n = settings["oversub_threads"]
    work = W.ModelWork(settings.device, "mixed", batch=settings["batch"])
    W.run_and_check(work, n, settings["oversub_iters"], settings["join_timeout"])


def test_sync_while_working(settings, threads):
    """Workers run models while one extra thread calls torch.<device>.synchronize() in a loop
    until they are done; the main thread synchronizes too. Results must be unaffected."""
    work = W.ModelWork(settings.device, "mixed", batch=settings["batch"])
    work.prepare(threads)
    iters = settings["iters"]
    refs = work.reference(threads, iters)
    done = threading.Event()
    syncs = [0]
    sync_error = []

    def syncer():
        try:
            while not done.is_set():
                settings.sync()
                syncs[0] += 1
        except BaseException as exc:  # noqa: BLE001
            sync_error.append(exc)

    t = threading.Thread(target=syncer, name="mpspatch-syncer", daemon=True)
    t.start()
    try:
        results = H.run_threads(threads, lambda tid: work.run(tid, iters),
                                settings["join_timeout"])
        settings.sync()
    finally:
        done.set()
        t.join(settings["join_timeout"])
    if sync_error:
        raise H.ThreadsFailed("synchronize() thread raised: %s: %s" % (
            type(sync_error[0]).__name__, H.first_line(sync_error[0]))) from sync_error[0]
    assert not t.is_alive(), "synchronize() thread still running after the workers finished"
    assert syncs[0] > 0, "the synchronize() thread never ran"
    H.check_threads(results, refs, work.tol)




# Shapes the short-lived threads cycle through: (model, batch, sequence length or None).
LIFE_SHAPES = [("sequential", b, None) for b in (1, 2, 3, 5, 8)] + \
    [("transformer", b, s) for b, s in ((1, 8), (2, 16), (3, 12), (2, 24))]
MIB = H.MIB
# Device tensors are all freed between measurements, so "allocated" must come back exactly; a
# little slack covers allocator bookkeeping (MPS counts its heap metadata there).
DEVICE_ALLOCATED_TOL = 1 * MIB
# What the device allocator or driver caches may grow by after warm-up (free blocks of new
# sizes), far below the cost of keeping per-thread graph and kernel caches of every dead thread.
DEVICE_CACHED_TOL = 64 * MIB


def _life_input(shape_id, device):
    import torch

    model, batch, seq = LIFE_SHAPES[shape_id]
    gen = torch.Generator().manual_seed(8000 + shape_id)
    size = (batch, 64) if seq is None else (batch, seq, 64)
    return torch.randn(size, generator=gen).to(device)


def _measure(settings):
    import gc

    import torch

    gc.collect()
    settings.sync()
    rss, _ = H.rss_bytes()
    dev, _ = H.device_memory(torch, settings.device)
    return rss, dev


def test_thread_start_end_memory(settings, note):
    """Threads that start and end hundreds of times (issue 7, hazard 6: a thread keeps its
    stream for life, never commits on exit, and its thread-local graph and kernel caches are
    never freed). Round after round, fresh threads each run a small model on one of several
    shapes (graph-built ops on MPS: LayerNorm, GELU, Softmax, attention), every result checked
    against the single-threaded reference. After a warm-up that has run every shape, memory is
    measured, and again at the end: the process RSS may grow by at most life_rss_tol_mib
    (24 MiB quick, 48 MiB full), the device's live-tensor memory by at most 1 MiB, and what its
    allocator or driver caches by at most 64 MiB. The numbers are reported as notes."""
    import torch

    rounds, n, warm = settings["life_rounds"], settings["life_threads"], settings["life_warmup"]
    if settings.override:
        n = max(settings.override)
    assert rounds > warm, "profile error: life_rounds %d must exceed life_warmup %d" % (rounds, warm)
    device = settings.device
    models = {name: M.build_model(name, 100, device) for name in ("sequential", "transformer")}
    inputs = [_life_input(i, device) for i in range(len(LIFE_SHAPES))]
    refs = [M.forward(models[LIFE_SHAPES[i][0]], x).cpu() for i, x in enumerate(inputs)]
    settings.sync()

    def worker(r, tid):
        shape_id = (r * n + tid) % len(LIFE_SHAPES)
        y = M.forward(models[LIFE_SHAPES[shape_id][0]], inputs[shape_id])
        return shape_id, y.cpu()

    rss_source = H.rss_bytes()[1]
    dev_lack = H.device_memory(torch, device)[1]
    base = None
    for r in range(rounds):
        if r == warm:
            base = _measure(settings)
        results = H.run_threads(n, lambda tid: worker(r, tid), settings["join_timeout"])
        try:
            H.check_threads([y for _, y in results], [refs[s] for s, _ in results], H.MODEL_TOL)
        except AssertionError as exc:
            raise AssertionError("round %d of %d: %s" % (r + 1, rounds, exc))
        del results
    end = _measure(settings)
    lifetimes = (rounds - warm) * n
    note("thread_lifetimes", "%d in all, %d measured after a warm-up of %d" % (
        rounds * n, lifetimes, warm * n))
    if base[0] is None or end[0] is None:
        note("not checked", "process RSS: %s" % rss_source)
    for name, why in dev_lack:
        note("not checked", "%s: %s" % (name, why))
    before, after = dict(base[1]), dict(end[1])
    tolerances = {"rss": settings["life_rss_tol_mib"] * MIB, "allocated": DEVICE_ALLOCATED_TOL,
                  "cached": DEVICE_CACHED_TOL}
    if base[0] is not None and end[0] is not None:
        before["rss"], after["rss"] = base[0], end[0]
    rows, problems = H.memory_growth(before, after, tolerances, lifetimes)
    for key, text in rows:
        note("%s_mib" % key, text + (" (%s)" % rss_source if key == "rss" else ""))
    assert not problems, "; ".join(problems)

"""Thread lifecycle: churn (threads come and go), over-subscription (more threads than the
MPS stream pool has streams) and synchronize() from one thread while others work. Seeds: the
"Over-Subscription Detection" and "Thread Churn (Freelist)" tests; off-queue synchronize()
fixed by syncing the current stream."""

import threading

import suite_harness as H
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



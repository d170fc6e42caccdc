"""Events across threads (issue 7, hazard 5: an MPSEvent bound to the stream current when it
was acquired, MPSGuardImpl::record/block ignoring their stream, an unguarded event counter;
hazard 3 for elapsed_time).

Pairs of threads: a producer queues a chain of matmuls (suite_work.IntChain) between a start
and an end event, recorded on its own stream, and hands the events and its (not yet read)
output to a consumer thread; the producer stays alive until the consumer is done. The consumer:

  1. end.wait(): its own stream waits for the producer's end event; it then queues work on the
     producer's output and reads that (exact check of the derived result);
  2. end.synchronize(): the host waits; end.query() must then be true, and the producer's
     output read on the consumer thread must equal the reference exactly;
  3. start.elapsed_time(end), called on the consumer thread for events recorded on the
     producer's: finite, not negative, and not longer than the host-measured interval that
     contains both records and the wait (plus 2 ms for clock granularity). A time read before
     the end event really completed (a synchronize that waited for the wrong stream) breaks
     that bound.

All pairs run at once, behind one barrier. On CUDA each thread runs on a stream of its own
(suite_harness.thread_stream), so events really cross streams. CPU has no device events: the
hand-off of results between threads is still checked, then the test is skipped, naming what it
could not check.

test_event_reuse_across_threads (issue 18, hazard 3) records the same event objects again and
again (recycled) or makes and drops events every round (churn) across thread pairs; see its
section below and suite_work.EventReuse.
"""

import threading
import time

import pytest

import suite_harness as H
import suite_work as W

SLACK_MS = 2.0


def _derive(y, tid):
    return W.int_reduce(y * 2 + (tid % 3))


def test_events_across_threads(settings, threads, note):
    import torch

    device = settings.device
    pairs = max(1, threads // 2)
    work = W.IntChain(device, settings["event_size"], settings["event_steps"])
    work.prepare(pairs)
    refs = work.reference(pairs)
    derived_refs = [_derive(r, tid) for tid, r in enumerate(refs)]
    settings.sync()
    make, why = H.device_events(torch, device)
    timeout = settings["join_timeout"]
    handoff = [threading.Event() for _ in range(pairs)]
    done = [threading.Event() for _ in range(pairs)]
    box = [None] * pairs

    def producer(pid):
        with H.thread_stream(torch, device):
            t0 = time.perf_counter()
            start = make(True) if make else None
            end = make(True) if make else None
            if start is not None:
                start.record()
            out = work.run(pid)
            if end is not None:
                end.record()
            box[pid] = (out, start, end, t0)
        handoff[pid].set()
        # Stay alive (and keep the output alive) until the consumer is done with it.
        if not done[pid].wait(timeout):
            raise RuntimeError("consumer %d never finished" % pid)

    def consumer(pid):
        try:
            if not handoff[pid].wait(timeout):
                raise RuntimeError("producer %d never handed over" % pid)
            out, start, end, t0 = box[pid]
            with H.thread_stream(torch, device):
                if end is not None:
                    end.wait()
                derived = _derive(out, pid).cpu()
                elapsed = None
                if end is not None:
                    end.synchronize()
                    queried = bool(end.query())
                    wall_ms = (time.perf_counter() - t0) * 1000.0
                    elapsed = start.elapsed_time(end)
                else:
                    queried, wall_ms = True, None
                read = out.cpu()
            return read, derived, queried, elapsed, wall_ms
        finally:
            done[pid].set()

    def body(tid):
        if tid < pairs:
            return producer(tid)
        return consumer(tid - pairs)

    results = H.run_threads(2 * pairs, body, timeout)[pairs:]
    H.check_threads([r[0] for r in results], refs, work.tol, what="producer output read by consumer")
    H.check_threads([r[1] for r in results], derived_refs, work.tol,
                    what="consumer result after end.wait()")
    if make is None:
        pytest.skip("checked: results handed between %d thread pairs (exact); not checked: "
                    "event record/wait/synchronize/query/elapsed_time: %s" % (pairs, why))
    bad_query = [pid for pid, r in enumerate(results) if not r[2]]
    assert not bad_query, "end.query() false after end.synchronize() in pairs %s" % bad_query
    bad = ["pair %d: %s" % (pid, H.elapsed_problem(r[3], r[4], SLACK_MS))
           for pid, r in enumerate(results) if H.elapsed_problem(r[3], r[4], SLACK_MS)]
    assert not bad, "%d of %d elapsed times impossible; first: %s" % (len(bad), pairs, bad[0])
    note("elapsed_ms", ", ".join("%.3f" % r[3] for r in results))


# ---------------------------------------------------------------------------------------------
# Event objects reused across threads (issue 18, hazard 3): see suite_work.EventReuse. A pooled
# event whose counter is reset when it is reacquired (churn) or recorded again (recycled) while
# an old signal may still land lets wait() pass and query()/synchronize() return before the
# work is done: with a stream per thread, the consumer then reads an unwritten output. An
# elapsed_time that waits for a notification that cannot come after the end event was
# synchronized hangs (reported by the join timeout as a hang). On CUDA each thread runs on a
# stream of its own (suite_harness.thread_stream), so every wait crosses streams; on MPS the
# threads share the default stream unless PYTORCH_MPS_PER_THREAD_STREAMS=1.


@pytest.mark.parametrize("mode", W.EVENT_REUSE_MODES)
def test_event_reuse_across_threads(settings, threads, mode, note):
    import torch

    device = settings.device
    pairs = max(1, threads // 2)
    make, why = H.device_events(torch, device)
    work = W.EventReuse(device, make, settings["reuse_size"], settings["reuse_steps"],
                        settings["reuse_rounds"], settings["reuse_pool"], mode)
    refs = work.reference(pairs)
    for pid in range(pairs):
        work.weight(pid)
    settings.sync()
    results = work.run(pairs, settings["join_timeout"], lambda: H.thread_stream(torch, device))
    elapsed = work.check(results, refs, SLACK_MS)
    if make is None:
        pytest.skip("checked: %d rounds handed between %d thread pairs through queues (exact); "
                    "not checked: event record/wait/synchronize/query/elapsed_time and their "
                    "reuse: %s" % (work.rounds, pairs, why))
    records = pairs * work.rounds
    note("event_records", "%d start/end pairs recorded by %d producers, %s" % (
        records, pairs, "%d event pairs per producer, each recorded ~%d times" % (
            work.pool, work.rounds // work.pool) if mode == "recycled" else
        "a fresh pair every round, dropped after use"))
    if elapsed:
        note("elapsed_ms", "min %.3f, max %.3f over %d synchronized rounds" % (
            min(elapsed), max(elapsed), len(elapsed)))

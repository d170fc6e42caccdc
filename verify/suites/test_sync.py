"""A main thread that synchronizes the device and then reads what its workers produced
(issue 7, hazard 3: torch.mps.synchronize() that waits only for the caller's stream).

Workers queue a chain of matmuls (suite_work.IntChain) and neither synchronize nor read their
result; the main thread calls a device-wide synchronize and then reads every worker's output,
which must equal the single-threaded reference exactly. Every device-wide synchronize this torch
has for the device is tried in its own round (torch.<device>.synchronize, and
torch.accelerator.synchronize where it exists and the device is the current accelerator); the
calls that are missing are reported as notes.

  alive   the workers are still running (waiting on the main thread) while it synchronizes
  exited  the workers have ended before it synchronizes (their streams' pending work must
          still be waited for: a thread's exit must not strand it)

On CUDA every worker runs on a stream of its own (suite_harness.thread_stream), so the control
checks a real device-wide synchronize across streams. On CPU there is nothing to wait for: ops
are synchronous; with torch < 2.1 (no torch.cpu.synchronize) the read is still checked and the
test is then skipped, saying so, because no device-wide synchronize could be exercised.

test_sync_loop_throughput (issue 18, hazard 2: a device-wide synchronize that is a global
barrier) measures the forwards per second of the workers with and without one more thread
calling torch.<device>.synchronize() in a loop, and reports both; see its section below.
"""

import threading

import pytest

import suite_harness as H
import suite_work as W


def _round(settings, work, threads, mode, sync):
    """Run the workers; sync() on the main thread; read every output to the CPU."""
    import torch

    outs = [None] * threads
    timeout = settings["join_timeout"]
    queued = threading.Barrier(threads + 1) if mode == "alive" else None
    release = threading.Event()

    def worker(tid):
        try:
            with H.thread_stream(torch, settings.device):
                outs[tid] = work.run(tid)  # queued only: no synchronize, no read
        except BaseException:
            if queued is not None:
                queued.abort()
            raise
        if queued is not None:
            queued.wait(timeout)
            if not release.wait(timeout):
                raise RuntimeError("main thread never released the workers")

    if mode == "exited":
        H.run_threads(threads, worker, timeout)
        sync()
        return [o.cpu() for o in outs]

    box = []
    runner = threading.Thread(target=lambda: box.append(_collect(threads, worker, timeout)),
                              name="mpspatch-sync-runner", daemon=True)
    runner.start()
    try:
        queued.wait(timeout)
    except threading.BrokenBarrierError:
        release.set()
        runner.join(timeout)
        if box and isinstance(box[0], BaseException):
            raise box[0]
        raise H.ThreadsFailed("a worker failed before queuing its work")
    try:
        sync()
        have = [o.cpu() for o in outs]
    finally:
        release.set()
        runner.join(timeout)
    if runner.is_alive():
        raise H.ThreadsHung("workers still running %.0fs after the main thread released them" %
                            timeout)
    if box and isinstance(box[0], BaseException):
        raise box[0]
    return have


def _collect(threads, worker, timeout):
    try:
        return H.run_threads(threads, worker, timeout)
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread
        return exc


@pytest.mark.parametrize("mode", ["alive", "exited"])
def test_main_thread_sync_reads_workers(settings, threads, mode, note):
    import torch

    work = W.IntChain(settings.device, settings["sync_size"], settings["sync_steps"])
    work.prepare(threads)
    refs = work.reference(threads)
    settings.sync()
    syncs, lack = H.device_wide_syncs(torch, settings.device)
    if syncs:  # without any, the skip below says what was not checked
        for name, why in lack:
            note("not checked", "%s: %s" % (name, why))
    for name, fn in syncs:
        have = _round(settings, work, threads, mode, fn)
        try:
            H.check_threads(have, refs, work.tol)
        except AssertionError as exc:
            raise AssertionError("after %s() on the main thread: %s" % (name, exc))
    if not syncs:
        if settings.device != "cpu":
            pytest.skip("no device-wide synchronize for %s in torch %s: nothing checked" % (
                settings.device, torch.__version__))
        # CPU ops complete before they return: reading without a synchronize is valid here.
        have = _round(settings, work, threads, mode, lambda: None)
        H.check_threads(have, refs, work.tol)
        pytest.skip("checked: every worker's output read by the main thread (exact); not "
                    "checked: a device-wide synchronize (%s)" % "; ".join(
                        "%s %s" % (n, w) for n, w in lack))


# ---------------------------------------------------------------------------------------------
# One thread synchronizing the device in a loop while the others run forwards (issue 18,
# hazard 2): a device-wide synchronize that waits for the GPU while holding a stream's queue
# (or its lock) makes every other thread wait with it, and loops that synchronize per forward
# then run in lockstep. The test measures the workers' throughput with and without the
# synchronizing thread and reports both (notes); it asserts only that every forward's result
# is right and that the synchronizing thread really ran. Throughput is a measurement, never a
# pass/fail criterion: it depends on the machine and its load.

SYNC_LOOP_ROUNDS = ("alone", "with sync", "alone", "with sync")


def test_sync_loop_throughput(settings, threads, note):
    import torch

    device = settings.device
    name = "torch.%s.synchronize" % device
    syncs, lack = H.device_wide_syncs(torch, device)
    sync = dict(syncs).get(name)
    iters = settings["sync_loop_iters"]
    timeout = settings["join_timeout"]
    work = W.ModelWork(device, "mlp", "shared", batch=settings["batch"])
    work.prepare(threads)
    refs = work.reference(threads, iters)
    W.timed_forwards(work, threads, 1, timeout)  # warm-up: every thread's first forward
    if sync is None:
        outs, _, _ = W.timed_forwards(work, threads, iters, timeout)
        H.check_threads(outs, refs, work.tol)
        why = dict(lack).get(name, "absent in torch %s" % torch.__version__)
        pytest.skip("checked: %d threads' forwards (read back each time) against the reference; "
                    "not measured: throughput beside a synchronizing thread: %s: %s" % (
                        threads, name, why))
    fps = {"alone": [], "with sync": []}
    calls = []
    for label in SYNC_LOOP_ROUNDS:
        outs, wall, count = W.timed_forwards(work, threads, iters, timeout,
                                             sync if label == "with sync" else None)
        try:
            H.check_threads(outs, refs, work.tol)
        except AssertionError as exc:
            raise AssertionError("%s: %s" % (label, exc))
        fps[label].append(threads * iters / max(wall, 1e-9))
        if label == "with sync":
            assert count >= 1, "the synchronizing thread never ran"
            calls.append((count, wall))
    alone = sum(fps["alone"]) / len(fps["alone"])
    beside = sum(fps["with sync"]) / len(fps["with sync"])
    note("forwards_per_s_alone", ", ".join("%.1f" % f for f in fps["alone"]))
    note("forwards_per_s_with_sync", ", ".join("%.1f" % f for f in fps["with sync"]))
    note("throughput_ratio", "%.3f (mean with a thread calling %s in a loop / mean without; "
                             "%d threads x %d forwards per round)" % (
                                 beside / alone, name, threads, iters))
    note("sync_calls", ", ".join("%d in %.3f s" % c for c in calls))

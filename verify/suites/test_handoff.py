"""Hand-offs between threads with no explicit synchronize (issue 18, hazard 1: silent wrong
results).

With one stream per thread bound automatically (the second pass of the series), a tensor made
on one thread and used on another was no longer ordered: nothing raised, the consumer simply
read memory that was not written yet. The third pass makes one shared stream the default again
(per-thread streams only with PYTORCH_MPS_PER_THREAD_STREAMS=1), so code that was correct on
v2.9.1 stays correct. These tests are that code:

  test_prefetch_queue_handoff         producers make device tensors (an asynchronous copy from
                                      pinned host memory, or randn on the device) behind a
                                      backlog of their own queued work and hand them through a
                                      queue.Queue to consumers that compute on them
  test_workers_return_device_tensors  workers hand their unread results to the main thread,
                                      which reads them (.item(), .cpu()) while they still run
                                      (queue) or after they have ended (joined)

Nobody synchronizes: the reads are the only waits. On CUDA every thread uses the default
stream (no suite_harness.thread_stream here: these tests are about the default), where the
hand-off is ordered; the CUDA run is the control. On the CPU ops are synchronous: the tests
check the hand-off plumbing there. Under PYTORCH_MPS_PER_THREAD_STREAMS=1 these hand-offs are
unordered by design (they need an event or a per-stream synchronize, as with CUDA streams)
and the tests are expected to fail; with PYTORCH_MPS_STREAM_DEBUG=1 as well, to raise.
Every value is an integer held exactly in float32, so every comparison is exact.
"""

import queue

import pytest

import suite_harness as H
import suite_work as W


@pytest.mark.parametrize("source", W.HANDOFF_SOURCES)
def test_prefetch_queue_handoff(settings, threads, source, note):
    producers = max(1, threads // 2)
    consumers = max(1, threads - producers)
    work = W.PrefetchHandoff(settings.device, source, settings["handoff_size"],
                             settings["handoff_backlog"], settings["handoff_items"])
    work.prepare(producers)
    refs = work.reference(producers)
    settings.sync()
    if source == "copy":
        note("pinned host memory", "yes" if work.pinned else "no: %s" % work.pin_why)
    results, busy = work.run(producers, consumers, settings["join_timeout"])
    work.check(results, busy, refs)


@pytest.mark.parametrize("mode", ["queue", "joined"])
def test_workers_return_device_tensors(settings, threads, mode):
    work = W.ReturnedTensors(settings.device, settings["handoff_size"],
                             settings["handoff_backlog"], settings["handoff_items"])
    work.prepare(threads)
    refs = work.reference(threads)
    settings.sync()
    timeout = settings["join_timeout"]
    results = {}
    if mode == "joined":
        for outs in H.run_threads(threads, work.run, timeout):
            for tid, step, y in outs:
                results[(tid, step)] = work.read(y, step)
        work.check(results, refs)
        return

    handed = queue.Queue()
    failed = object()

    def worker(tid):
        try:
            return work.run(tid, handed.put)
        except BaseException:
            handed.put(failed)  # the main thread must not wait for results that never come
            raise

    runner = H.Background(threads, worker, timeout)
    for _ in range(threads * work.steps):
        try:
            item = handed.get(timeout=timeout)
        except queue.Empty:
            break
        if item is failed:
            break
        tid, step, y = item
        results[(tid, step)] = work.read(y, step)
        del item, y
    runner.result()  # raises what a worker raised
    work.check(results, refs)

"""Buffer reuse across threads under allocation churn (issue 7, hazard 1: silent wrong results).

With one stream per thread, a buffer freed by thread A while A's queued (maybe not even
committed) work still reads it must not be handed to thread B's stream until that work is done.
v2.9.1 had one queue and was safe by accident; a stream-unaware pool is not. The hazard gives no
crash, only wrong numbers, so every output of every thread is compared exactly with the
reference computed single-threaded before the threads started (the integer-valued matrices of
suite_work make exact comparison valid on every device). On CUDA each worker runs on a stream
of its own (suite_harness.thread_stream), the same cross-stream situation, where PyTorch's
stream-aware caching allocator is the control.
"""

import suite_harness as H
import suite_work as W


def test_buffer_reuse_across_threads(settings, threads):
    work = W.AllocChurn(settings.device, settings["alloc_sizes"])
    iters = settings["alloc_iters"]
    refs = work.reference(threads, iters)
    settings.sync()
    results = H.run_threads(threads, lambda tid: work.run(tid, iters), settings["join_timeout"])
    settings.sync()
    H.check_threads(results, refs, work.tol)

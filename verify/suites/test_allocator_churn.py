"""Buffer reuse across threads under allocation churn (issue 7, hazard 1: silent wrong results).

With one stream per thread, a buffer freed by thread A while A's queued (maybe not even
committed) work still reads it must not be handed to thread B's stream until that work is done.
v2.9.1 had one queue and was safe by accident; a stream-unaware pool is not. The hazard gives no
crash, only wrong numbers, so every output of every thread is compared exactly with the
reference computed single-threaded before the threads started (the integer-valued matrices of
suite_work make exact comparison valid on every device). On CUDA each worker runs on a stream
of its own (suite_harness.thread_stream), the same cross-stream situation, where PyTorch's
stream-aware caching allocator is the control.

test_memory_threads_vs_one (issue 18, hazard 4: heaps per stream multiply memory) reads the
device allocator's counters while 8 threads hold two 24 MiB tensors each, and while one thread
does, reports both, and asserts only suite_harness.memory_bound, a generous bound that heaps
per stream break (8 GiB against 1.4 GiB on a Mac's unified memory).
"""

import threading

import pytest

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


# ---------------------------------------------------------------------------------------------
# Memory of many threads against one (issue 18, hazard 4: per-stream heaps). Each thread holds
# two tensors of mem_mib MiB (24 MiB: an activation of the size the issue names) at the same
# moment; the device's counters are read while they are held, first with one thread, then with
# n (8 unless --threads says otherwise), each phase after an empty_cache.

MIB = H.MIB


def _memory_phase(settings, n, elems):
    """n threads each warm up, then hold two tensors of elems float32 while the main thread
    reads the counters. Returns ({counter: growth in bytes}, values read back by each thread)."""
    import gc

    import torch

    device = settings.device
    timeout = settings["join_timeout"]
    gate = threading.Barrier(n + 1)

    def counters():
        gc.collect()
        settings.sync()
        have, _ = H.device_memory(torch, device)
        rss, _ = H.rss_bytes()
        if rss is not None:
            have["rss"] = rss
        return have

    def worker(tid):
        try:
            with H.thread_stream(torch, device):
                # The same ops on a small tensor first: kernels, graphs and this thread's first
                # device use are paid before the baseline is read.
                warm = torch.full((1024,), float(tid + 1), device=device) * 2
                del warm
                settings.sync()
                gate.wait(timeout)  # 1: warmed up; the main thread reads the baseline
                gate.wait(timeout)  # 2: baseline read
                a = torch.full((elems,), float(tid + 1), device=device)
                b = a * 2
                settings.sync()
                gate.wait(timeout)  # 3: everyone holds a and b; the main thread reads
                gate.wait(timeout)  # 4: read
                step = max(1, elems // 1024)
                return a[::step].cpu().clone(), b[::step].cpu().clone()
        except BaseException:
            gate.abort()
            raise

    runner = H.Background(n, worker, timeout)
    try:
        gate.wait(timeout)
        H.empty_cache(torch, device)
        base = counters()
        gate.wait(timeout)
        gate.wait(timeout)
        held = counters()
        gate.wait(timeout)
    except BaseException as exc:
        gate.abort()  # release the workers
        if isinstance(exc, threading.BrokenBarrierError):
            runner.result()  # a worker broke the barrier: raise what it raised
        raise
    values = runner.result()
    growth = {k: held[k] - base[k] for k in held if k in base}
    return growth, values


def test_memory_threads_vs_one(settings, note):
    import torch

    device = settings.device
    n = settings["mem_threads"]
    if settings.override:
        n = max(settings.override)
    elems = settings["mem_mib"] * MIB // 4
    held = {1: 2 * elems * 4, n: n * 2 * elems * 4}  # bytes the threads hold
    emptied, why_not = H.empty_cache(torch, device)
    dev_lack = H.device_memory(torch, device)[1]
    grown = {}
    for count in sorted({1, n}):
        growth, values = _memory_phase(settings, count, elems)
        for tid, (a, b) in enumerate(values):
            want = float(tid + 1)
            assert bool((a == want).all()) and bool((b == 2 * want).all()), (
                "%d threads: thread %d read back wrong values from its %d MiB tensors" % (
                    count, tid, settings["mem_mib"]))
        grown[count] = growth
        note("memory_%dt_mib" % count, ", ".join(
            "%s %+.1f" % (k, v / MIB) for k, v in sorted(growth.items())) +
            " (growth while %d thread(s) held %d MiB)" % (count, held[count] // MIB))
    if not emptied:
        note("not checked", "empty_cache: %s" % why_not)
    for name, why in dev_lack:
        note("not checked", "%s: %s" % (name, why))
    if "cached" in grown[n]:
        # The device allocator's own counters: live tensors and what it holds from the driver.
        allocated_n = grown[n].get("allocated", held[n])
        cached_n, cached_1 = grown[n]["cached"], grown[1]["cached"]
        assert allocated_n >= held[n], (
            "the device's allocated counter grew by %.1f MiB while %d threads held %d MiB: the "
            "counters do not measure these tensors" % (allocated_n / MIB, n, held[n] // MIB))
        what = "device cached/driver memory"
    elif "rss" in grown[n]:
        # No device counters (the CPU): the process RSS stands in, against the bytes held.
        allocated_n, cached_n, cached_1 = held[n], grown[n]["rss"], grown[1]["rss"]
        what = "process RSS"
    else:
        pytest.skip("no memory counter at all on %s: device counters %s; RSS unavailable" % (
            device, "; ".join(w for _, w in dev_lack)))
    bound = H.memory_bound(allocated_n, cached_1)
    note("memory_ratio", "%s: %.1f MiB with %d threads, %.1f MiB with 1 (x%.2f); bound %.1f MiB" % (
        what, cached_n / MIB, n, cached_1 / MIB, cached_n / max(cached_1, 1), bound / MIB))
    assert cached_n <= bound, (
        "%s grew by %.1f MiB while %d threads held %d MiB, more than the %d MiB live plus "
        "one thread's growth (%.1f MiB) plus %d MiB: a heap (or pool) per thread?" % (
            what, cached_n / MIB, n, held[n] // MIB, allocated_n // MIB, cached_1 / MIB,
            H.MEMORY_SLACK // MIB))

"""Raw tensor ops from many threads: randn (per-thread seeded generators), mm, relu and a
device synchronize each step. The seeds: stock 2.9.1 crashed here ("Scheduled handler provided
after commit call"); the stream pool made 8-16 threads pass."""

import suite_work as W


def test_parallel_raw_ops(settings, raw_threads):
    work = W.RawOps(settings.device, size=settings["raw_size"])
    W.run_and_check(work, raw_threads, settings["iters"] * 2, settings["join_timeout"])


def test_large_tensors(settings):
    """Seed: 4 threads x 20 iterations of 1024x1024 passed after the stream pool (quick: 1024,
    2 iterations; full: 2048, 8 threads, 20 iterations)."""
    work = W.RawOps(settings.device, size=settings["large_size"])
    W.run_and_check(work, settings["large_threads"], settings["large_iters"],
                    settings["join_timeout"])

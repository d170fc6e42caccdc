"""Real models from many threads: one model shared by all threads, one model per thread
(built on the main thread, or moved to the device inside the thread), and different models on
different threads at once (seeds: nn.Linear SIGSEGV at 3+ threads, "A and B index not found",
nn.Sequential "Invalid KernelDAG"). Every model is warmed up single-threaded first (the
reference pass); cold starts are test_startup.py's."""

import pytest

import suite_models as M
import suite_work as W


@pytest.mark.parametrize("model", M.MODEL_NAMES)
def test_shared_model(settings, threads, model):
    work = W.ModelWork(settings.device, model, "shared", batch=settings["batch"])
    W.run_and_check(work, threads, settings["iters"], settings["join_timeout"])


@pytest.mark.parametrize("created", ["per-thread", "in-thread"])
@pytest.mark.parametrize("model", M.MODEL_NAMES)
def test_model_per_thread(settings, threads, model, created):
    work = W.ModelWork(settings.device, model, created, batch=settings["batch"])
    W.run_and_check(work, threads, settings["iters"], settings["join_timeout"])


def test_mixed_models(settings, threads):
    """Thread i runs model i % 4 (MLP, Conv1d stack, Sequential, Transformer layer), all at
    the same time; with 4+ threads every model runs concurrently with the others."""
    work = W.ModelWork(settings.device, "mixed", batch=settings["batch"])
    W.run_and_check(work, threads, settings["iters"], settings["join_timeout"])

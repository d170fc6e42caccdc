#!/usr/bin/env python3
"""Throughput scaling of concurrent inference, and why it stops.

    python bench_scaling.py --device cuda --profile quick|full --threads 1,2,4,8,16

For a small MLP, a medium model (4-layer TransformerEncoder) and a raw matmul it measures
forwards per second at each thread count (every thread runs its own forwards, each ending with
its result on the host, as a server would), the efficiency T(n) / (n * T(1)), the saturation
point (where throughput stops rising by 5%), and batched inference at the same total work (one
thread, batch n times larger).

To explain where scaling stops it splits one single-threaded forward into host time (Python,
dispatch and kernel launch: the calling thread's wall time with the device's work kept out of
it) and device time:
  cuda  the GPU is first held busy by a spin kernel (torch.cuda._sleep), so the forwards are
        only queued while the host is timed; CUDA events around the queued forwards then time
        the device's work alone, with no host gaps in between
  mps   MPS events around the forwards (an upper bound: host gaps between kernels count)
  cpu   the host is the device: device time = host time
One thread pays host + device time per forward. Threads can hide one thread's host time
behind another's device work, but one device queue runs device work one forward at a time, so
the speed-up over one thread is at most (host + device) / device: the reported ceiling. If
the GIL serialized all host work the bound would be (host + device) / max(host, device)
(gil_ceiling, at most 2); ATen releases the GIL while an op runs, so the truth lies between.
Each row is labelled scaling (efficiency >= 0.7), host-bound or device-bound (whichever side
of the split is larger).

Events (JSON lines) go to $MPSPATCH_EVENTS when set: env, one "scaling" row per model, mode
and thread count, and a "summary". A table goes to stdout. Nothing here is asserted.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import suite_harness as H  # noqa: E402

# Per profile: model sizes and forwards per thread.
SIZES = {
    "quick": {"mlp": (256, 16), "tf": (128, 4, 32), "mm": 256,
              "iters": {"mlp-small": 30, "transformer-medium": 4, "matmul": 20},
              "split_iters": {"mlp-small": 30, "transformer-medium": 4, "matmul": 30},
              "threads": [1, 2, 4, 8]},
    "full": {"mlp": (512, 32), "tf": (256, 8, 64), "mm": 1024,
             "iters": {"mlp-small": 300, "transformer-medium": 40, "matmul": 200},
             "split_iters": {"mlp-small": 50, "transformer-medium": 8, "matmul": 100},
             "threads": [1, 2, 4, 8, 16]},
}
MODELS = ("mlp-small", "transformer-medium", "matmul")


class Bench:
    """One model: how to build its input for a batch factor and run one forward."""

    def __init__(self, name, device, sizes):
        self.name = name
        self.device = device
        gen = torch.Generator().manual_seed(3)
        torch.manual_seed(3)
        if name == "mlp-small":
            width, self.batch = sizes["mlp"]
            self.module = nn.Sequential(nn.Linear(width, width), nn.ReLU(),
                                        nn.Linear(width, width), nn.ReLU(),
                                        nn.Linear(width, 64)).to(device).eval()
            self.shape = (width,)
        elif name == "transformer-medium":
            d, self.batch, seq = sizes["tf"]
            layer = nn.TransformerEncoderLayer(d_model=d, nhead=8 if d % 8 == 0 else 4,
                                               dim_feedforward=4 * d, dropout=0.0,
                                               batch_first=True)
            self.module = nn.TransformerEncoder(layer, num_layers=4).to(device).eval()
            self.shape = (seq, d)
        elif name == "matmul":
            n = sizes["mm"]
            self.batch = 1
            self.weight = torch.randn(n, n, generator=gen).to(device) / n ** 0.5
            self.module = None
            self.shape = (n, n)
        else:
            raise ValueError("unknown model %r" % name)
        self._gen = gen

    def make_input(self, factor):
        if self.module is None:
            shape = self.shape if factor == 1 else (factor,) + self.shape
        else:
            shape = (self.batch * factor,) + self.shape
        return torch.randn(shape, generator=self._gen).to(self.device)

    def forward(self, x):
        with torch.no_grad():
            if self.module is None:
                return x @ self.weight
            return self.module(x)

    def infer(self, x):
        """One served request: the forward plus its result reaching the host."""
        out = self.forward(x)
        return out.reshape(-1)[:1].cpu()


def split_host_device(bench, x, k, device):
    """(host_ms, device_ms, how) for one single-threaded forward."""
    if device == "cpu":
        t0 = time.perf_counter()
        for _ in range(k):
            bench.infer(x)
        host = (time.perf_counter() - t0) * 1000.0 / k
        return host, host, "cpu: device time = host time"
    if device == "cuda":
        return _split_cuda(bench, x, k)
    if device == "mps":
        mps = getattr(torch, "mps", None)
        event = getattr(mps, "Event", None) if mps is not None else None
        H.synchronize(torch, device)
        t0 = time.perf_counter()
        if event is not None:
            start, end = event(enable_timing=True), event(enable_timing=True)
            start.record()
        for _ in range(k):
            bench.forward(x)
        host = (time.perf_counter() - t0) * 1000.0 / k
        if event is None:
            H.synchronize(torch, device)
            total = (time.perf_counter() - t0) * 1000.0 / k
            return host, total, "mps: no torch.mps.Event; device time = wall time (upper bound)"
        end.record()
        H.synchronize(torch, device)
        return host, start.elapsed_time(end) / k, "mps events (upper bound: host gaps count)"
    raise ValueError("unknown device %r" % device)


def _split_cuda(bench, x, k):
    # Cycles of the spin kernel per millisecond, measured.
    probe = 2_000_000
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    e0.record()
    torch.cuda._sleep(probe)
    e1.record()
    torch.cuda.synchronize()
    cycles_per_ms = probe / max(e0.elapsed_time(e1), 1e-3)
    # A first guess of the host time, from an unhidden run.
    t0 = time.perf_counter()
    for _ in range(k):
        bench.forward(x)
    guess_ms = (time.perf_counter() - t0) * 1000.0
    torch.cuda.synchronize()
    spin_ms = max(guess_ms * 3.0, 5.0)
    for _ in range(4):
        s0 = torch.cuda.Event(enable_timing=True)
        s1 = torch.cuda.Event(enable_timing=True)
        s2 = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s0.record()
        torch.cuda._sleep(int(spin_ms * cycles_per_ms))
        s1.record()
        t0 = time.perf_counter()
        for _ in range(k):
            bench.forward(x)
        enqueue_ms = (time.perf_counter() - t0) * 1000.0
        s2.record()
        torch.cuda.synchronize()
        if s0.elapsed_time(s1) >= enqueue_ms:
            return (enqueue_ms / k, s1.elapsed_time(s2) / k,
                    "cuda: spin kernel hides the device while the host is timed; CUDA events")
        spin_ms *= 4.0
    return (enqueue_ms / k, s1.elapsed_time(s2) / k,
            "cuda: spin kernel too short to hide the queue (device time may include host gaps)")


def timed_threads(n, k, work):
    """Run work(tid, k) on n threads behind a barrier; wall from first start to last end."""
    starts, ends = [0.0] * n, [0.0] * n

    def worker(tid):
        starts[tid] = time.perf_counter()
        work(tid, k)
        ends[tid] = time.perf_counter()

    H.run_threads(n, worker, timeout=600)
    return max(ends) - min(starts)


def measure(bench, device, counts, k, split_k):
    x1 = bench.make_input(1)
    inputs = {}
    for _ in range(3):
        bench.infer(x1)
    H.synchronize(torch, device)
    # The least of three repeats: noise (scheduling, clock ramps) only ever adds time.
    splits = [split_host_device(bench, x1, split_k, device) for _ in range(3)]
    host_ms = min(s[0] for s in splits)
    device_ms = min(s[1] for s in splits)
    how = splits[-1][2]

    def work(tid, iters):
        x = inputs[tid]
        for _ in range(iters):
            bench.infer(x)

    threads, batched = [], []
    for n in counts:
        for tid in range(n):
            if tid not in inputs:
                inputs[tid] = bench.make_input(1)
        wall = timed_threads(n, k, work)
        threads.append((n, n * k / wall))
        xb = bench.make_input(n)
        bench.infer(xb)  # warm the batched shape
        H.synchronize(torch, device)
        t0 = time.perf_counter()
        for _ in range(k):
            bench.infer(xb)
        batched.append((n, n * k / (time.perf_counter() - t0)))
    return host_ms, device_ms, how, threads, batched


def analyse(name, device, gil, host_ms, device_ms, threads, batched):
    fps1 = dict(threads)[1]
    if device == "cpu":
        # Ops release the GIL while they compute: cores, not the GIL, bound CPU threads.
        ceil = float(min(max(n for n, _ in threads), os.cpu_count() or 1))
        gceil = ceil
    else:
        ceil = H.ceiling(host_ms, device_ms)
        gceil = H.gil_ceiling(host_ms, device_ms) if gil else ceil
    rows = []
    for mode, curve in (("threads", threads), ("batched", batched)):
        for n, fps in curve:
            eff = H.efficiency(fps, fps1, n)
            rows.append({"event": "scaling", "model": name, "threads": n, "fps": round(fps, 2),
                         "efficiency": round(eff, 4), "host_ms": round(host_ms, 4),
                         "device_ms": round(device_ms, 4),
                         "label": H.label(eff, host_ms, device_ms), "mode": mode,
                         "ceiling": _r(ceil), "gil_ceiling": _r(gceil), "gil": gil})
    top_n, top_fps = max(threads, key=lambda r: r[1])
    last_n = max(n for n, _ in threads)
    last_eff = H.efficiency(dict(threads)[last_n], fps1, last_n)
    summary = {
        "fps_1": round(fps1, 2),
        "peak_fps": round(top_fps, 2), "peak_threads": top_n,
        "speedup": round(top_fps / fps1, 3) if fps1 > 0 else None,
        "saturation": H.saturation_point(threads),
        "label": H.label(last_eff, host_ms, device_ms),
        "host_ms": round(host_ms, 4), "device_ms": round(device_ms, 4),
        "ms_1": round(1000.0 / fps1, 4) if fps1 > 0 else None,
        "ceiling": _r(ceil), "gil_ceiling": _r(gceil),
        "batched_peak_fps": round(max(f for _, f in batched), 2),
    }
    return rows, summary


def _x(v):
    return "none" if v is None else "%.2fx" % v


def _r(x):
    return None if x is None else round(x, 3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=H.DEVICES, default=None)
    ap.add_argument("--profile", choices=sorted(SIZES), default="quick")
    ap.add_argument("--threads", default=None, help="thread counts, e.g. 1,2,4,8,16")
    ap.add_argument("--models", default=",".join(MODELS), help="subset of " + ",".join(MODELS))
    args = ap.parse_args(argv)

    device = args.device or H.best_device(torch)
    if not H.device_available(torch, device):
        sys.stderr.write("bench_scaling: device %s is not available to torch %s\n" % (
            device, torch.__version__))
        return 5
    try:
        counts = H.parse_threads(args.threads) or SIZES[args.profile]["threads"]
    except ValueError as exc:
        sys.stderr.write("bench_scaling: --threads: %s\n" % exc)
        return 2
    if 1 not in counts:
        counts = [1] + counts  # efficiency needs T(1)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            sys.stderr.write("bench_scaling: unknown model %r (have %s)\n" % (m, ", ".join(MODELS)))
            return 2

    events = H.EventLog.from_env()
    env = H.env_event(torch, device)
    events.emit(env)
    gil = env["gil"]
    sizes = SIZES[args.profile]
    print(H.provenance_line(env))
    print("device %s (%s), python %s, GIL %s, profile %s, torch threads %d" % (
        device, env["device_name"], env["python"], "enabled" if gil else "disabled",
        args.profile, torch.get_num_threads()))

    summaries = {}
    for name in models:
        bench = Bench(name, device, sizes)
        host_ms, device_ms, how, threads, batched = measure(
            bench, device, counts, sizes["iters"][name], sizes["split_iters"][name])
        rows, summary = analyse(name, device, gil, host_ms, device_ms, threads, batched)
        summary["split"] = how
        summaries[name] = summary
        for row in rows:
            events.emit(row)
        print()
        if device == "cpu":
            print("%s: one thread %.3f ms per forward (%s)" % (name, summary["ms_1"] or 0.0, how))
        else:
            print("%s: one thread %.3f ms per forward; host %.3f ms, device %.3f ms (%s)" % (
                name, summary["ms_1"] or 0.0, host_ms, device_ms, how))
        print("  speed-up %.2fx at %d threads (saturation at %s); ceiling %s (device), %s (if "
              "the GIL serialized all host work); %s" % (
                  summary["speedup"] or 0.0, summary["peak_threads"], summary["saturation"],
                  _x(summary["ceiling"]), _x(summary["gil_ceiling"]), summary["label"]))
        print("  %-8s %7s %12s %7s %12s %7s  %s" % (
            "threads", "", "fwd/s", "eff", "batched/s", "vs thr", "label"))
        by = {(r["mode"], r["threads"]): r for r in rows}
        for n in counts:
            t, b = by[("threads", n)], by[("batched", n)]
            print("  %-8d %7s %12.1f %7.2f %12.1f %6.2fx  %s" % (
                n, "", t["fps"], t["efficiency"], b["fps"], b["fps"] / t["fps"], t["label"]))
        sys.stdout.flush()

    events.emit({"event": "summary", "device": device, "gil": gil, "profile": args.profile,
                 "threads": counts, "models": summaries})
    events.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

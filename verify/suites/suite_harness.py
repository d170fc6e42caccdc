"""Shared machinery of the mpspatch concurrency suites.

Everything here is either a pure function (tested in test_harness.py) or a thin wrapper over
torch that hides the differences between devices and torch versions (1.13 on Debian, 2.x on
CUDA machines, patched 2.9.1 on a Mac). No test logic lives here.
"""

import json
import os
import platform
import sys
import threading
import time
import traceback

EVENTS_ENV = "MPSPATCH_EVENTS"
DESELECT_ENV = "MPSPATCH_DESELECT"
PROVENANCE_FILE = "mpspatch_provenance.json"
DEVICES = ("mps", "cuda", "cpu")


# ---------------------------------------------------------------------------------------------
# Profiles: how big and how long. quick keeps the whole suite under 3 minutes on 2 CPU cores;
# full repeats the stress the seed reports ran by hand (8-16 threads, 50-100 iterations).

PROFILES = {
    "quick": {
        "threads": [2, 4, 8],
        "raw_threads": [2, 4, 8, 16],
        "iters": 5,
        "raw_size": 64,
        "large_size": 1024,
        "large_threads": 4,
        "large_iters": 2,
        "batch": 4,
        "churn_rounds": 8,
        "churn_threads": 4,
        "oversub_threads": 32,
        "oversub_iters": 2,
        "cold_threads": 8,
        "mp_workers": 4,
        "mp_iters": 5,
        "boundary_plan": "gallop",
        "boundary_iters": 3,
        "join_timeout": 120.0,
        "child_timeout": 150.0,
        # Second-pass hazards (issue 7): allocator churn, device-wide sync, events, thread
        # lifetimes, two-phase first use. Sizes are square matrix sides.
        "alloc_sizes": [32, 48, 64, 96],
        "alloc_iters": 20,
        "sync_size": 128,
        "sync_steps": 16,
        "event_size": 128,
        "event_steps": 16,
        "life_rounds": 60,
        "life_threads": 4,
        "life_warmup": 15,
        "life_rss_tol_mib": 24,
        "first_use_threads": 16,
        "first_use_iters": 3,
        # Third-pass hazards (issue 18): hand-offs between threads without a synchronize,
        # device-wide synchronize in a loop, events reused across threads, memory of many
        # threads, backward with hooks. handoff_size is a square matrix side; handoff_backlog
        # the matmuls a producer queues before each item it hands over (work its stream must
        # finish before the item is written).
        "handoff_size": 128,
        "handoff_backlog": 8,
        "handoff_items": 12,
        "sync_loop_iters": 10,
        "reuse_size": 128,
        "reuse_steps": 8,
        "reuse_rounds": 12,
        "reuse_pool": 2,
        "mem_threads": 8,
        "mem_mib": 24,
        "hook_iters": 4,
    },
    "full": {
        "threads": [2, 4, 8, 16],
        "raw_threads": [2, 4, 8, 16],
        "iters": 50,
        "raw_size": 128,
        "large_size": 2048,
        "large_threads": 8,
        "large_iters": 20,
        "batch": 8,
        "churn_rounds": 50,
        "churn_threads": 8,
        "oversub_threads": 64,
        "oversub_iters": 20,
        "cold_threads": 16,
        "mp_workers": 8,
        "mp_iters": 50,
        "boundary_plan": "dense",
        "boundary_iters": 20,
        "join_timeout": 300.0,
        "child_timeout": 300.0,
        "alloc_sizes": [64, 96, 128, 192, 256],
        "alloc_iters": 50,
        "sync_size": 512,
        "sync_steps": 32,
        "event_size": 512,
        "event_steps": 32,
        "life_rounds": 250,
        "life_threads": 8,
        "life_warmup": 50,
        "life_rss_tol_mib": 48,
        "first_use_threads": 32,
        "first_use_iters": 20,
        "handoff_size": 512,
        "handoff_backlog": 16,
        "handoff_items": 100,
        "sync_loop_iters": 100,
        "reuse_size": 512,
        "reuse_steps": 16,
        "reuse_rounds": 100,
        "reuse_pool": 2,
        "mem_threads": 8,
        "mem_mib": 24,
        "hook_iters": 30,
    },
}


# On the CPU an op has finished when it returns: there is no queue for a long chain of queued
# work to race with and no allocator that defers reuse, so the full profile's large matrices
# and long chains (sized to keep a GPU busy while other threads move on) only cost minutes
# there. On the CPU these knobs keep their quick values; thread counts and iterations stay the
# profile's.
CPU_QUICK_KNOBS = ("sync_size", "sync_steps", "event_size", "event_steps", "alloc_sizes")

# The third-pass tests (issue 18) go further on the CPU, in every profile: there they check
# their own plumbing (queues, hand-backs, counters, the bounds' arithmetic) and that the CPU
# computes what the reference says; the races they are written for need a device queue. So
# that they add seconds, not minutes, to `make test` on two cores, their sizes and counts are
# small there (mem_mib too: the process RSS, which stands in for device memory counters on
# the CPU, grows by at most the pages the threads touch, whatever the size).
CPU_SHORT_KNOBS = {
    "handoff_size": 32,
    "handoff_backlog": 2,
    "handoff_items": 6,
    "reuse_size": 32,
    "reuse_steps": 2,
    "reuse_rounds": 6,
    "sync_loop_iters": 5,
    "mem_mib": 8,
    "hook_iters": 3,
}


def profile_knobs(profile, device):
    """The knobs of profile for device (PROFILES, with CPU_QUICK_KNOBS from quick and
    CPU_SHORT_KNOBS on the cpu)."""
    knobs = dict(PROFILES[profile])
    if device == "cpu":
        for key in CPU_QUICK_KNOBS:
            knobs[key] = PROFILES["quick"][key]
        knobs.update(CPU_SHORT_KNOBS)
    return knobs


def parse_threads(text):
    """Parse a --threads value such as "2,4,8" into a sorted list of distinct positive ints."""
    if text is None or text.strip() == "":
        return None
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise ValueError("thread count %r in %r is not an integer" % (part, text))
        if n < 1:
            raise ValueError("thread count %d in %r must be at least 1" % (n, text))
        out.add(n)
    if not out:
        raise ValueError("no thread counts in %r" % text)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# Devices and torch versions.


def device_available(torch, device):
    if device == "cpu":
        return True
    if device == "cuda":
        return bool(torch.cuda.is_available())
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        return bool(mps is not None and mps.is_available())
    return False


def best_device(torch):
    """The best device this torch can use: mps, then cuda, then cpu."""
    for dev in DEVICES:
        if device_available(torch, dev):
            return dev
    return "cpu"


def synchronize(torch, device):
    """Wait for all queued work on device (a no-op on cpu, where ops are synchronous)."""
    if device == "cuda":
        torch.cuda.synchronize()
    elif device == "mps":
        mps = getattr(torch, "mps", None)
        if mps is not None and hasattr(mps, "synchronize"):
            mps.synchronize()
        else:  # torch 1.13 has no torch.mps: a device-to-host copy waits for the queue.
            torch.zeros(1, device="mps").cpu()


# ---------------------------------------------------------------------------------------------
# Device capabilities beyond plain ops. Devices and torch versions differ in what they offer
# (torch.accelerator from 2.6, torch.mps from 2.0, MPS events from 2.1, no events on the CPU);
# a test asks here, exercises what exists and reports what does not, never passing silently.


def device_wide_syncs(torch, device):
    """The device-wide synchronize calls this torch has for device.

    Returns (have, lack): have is [(name, fn)] with fn() waiting for all queued work of every
    thread on the device; lack is [(name, why)] for the calls this torch or device lacks.
    torch.accelerator.synchronize counts only when the current accelerator is device.
    """
    have, lack = [], []
    mod = getattr(torch, device, None)
    name = "torch.%s.synchronize" % device
    if mod is not None and hasattr(mod, "synchronize"):
        have.append((name, mod.synchronize))
    elif device == "cpu":
        lack.append((name, "absent in torch %s (cpu ops run synchronously on the calling "
                           "thread)" % torch.__version__))
    else:
        lack.append((name, "absent in torch %s" % torch.__version__))
    acc = getattr(torch, "accelerator", None)
    name = "torch.accelerator.synchronize"
    if acc is None or not hasattr(acc, "synchronize"):
        lack.append((name, "torch.accelerator is absent in torch %s (added in 2.6)" %
                     torch.__version__))
    else:
        current = acc.current_accelerator() if hasattr(acc, "current_accelerator") else None
        kind = getattr(current, "type", None)
        if kind == device:
            have.append((name, acc.synchronize))
        else:
            lack.append((name, "the current accelerator is %s, not %s" % (kind, device)))
    return have, lack


def device_events(torch, device):
    """A factory for device events, or None and why not.

    Returns (make, why): make(enable_timing) builds an event with record(), wait(),
    synchronize(), query() and elapsed_time(); why is "" when make is not None.
    """
    if device == "cuda":
        return (lambda timing: torch.cuda.Event(enable_timing=timing)), ""
    if device == "mps":
        mps = getattr(torch, "mps", None)
        cls = getattr(getattr(mps, "event", None), "Event", None) or getattr(mps, "Event", None)
        if cls is not None:
            return (lambda timing: cls(enable_timing=timing)), ""
        generic = getattr(torch, "Event", None)
        if generic is not None:
            return (lambda timing: generic(device="mps", enable_timing=timing)), ""
        return None, "torch %s has no MPS events (torch.mps.Event is 2.1+)" % torch.__version__
    return None, ("%s has no device events in torch %s (%s ops run synchronously on the "
                  "calling thread)" % (device, torch.__version__, device))


class _NoStream:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def thread_stream(torch, device):
    """A context in which the calling thread's device work runs on a stream of its own.

    The patched MPS backend gives every thread its own stream without being asked; CUDA puts
    every thread on the one default stream unless told otherwise. On CUDA each worker therefore
    enters a fresh torch.cuda.Stream, so that the control exercises the same cross-stream
    orderings (device-wide synchronize, events, buffers freed on one stream and allocated on
    another) as a Mac. MPS and CPU: nothing to do.
    """
    if device == "cuda":
        return torch.cuda.stream(torch.cuda.Stream())
    return _NoStream()


def rss_bytes():
    """Resident set size of this process in bytes, and where it came from.

    Linux: /proc/self/statm (current RSS). Elsewhere (macOS): `ps -o rss=` (current RSS in KiB).
    Returns (None, why) when neither works.
    """
    try:
        with open("/proc/self/statm", "r") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE"), "/proc/self/statm"
    except (OSError, ValueError, IndexError):
        pass
    import subprocess

    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(os.getpid())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=30).stdout
        return int(out.strip()) * 1024, "ps -o rss="
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return None, "no /proc/self/statm and ps failed: %s" % exc


def device_memory(torch, device):
    """Device memory counters this torch has for device: ({name: bytes}, [(name, why)]).

    "allocated" is memory held by live tensors (it returns to its value when they are freed);
    "cached" is what the device allocator or driver holds for the process, free blocks included.
    """
    have, lack = {}, []
    if device == "cuda":
        have["allocated"] = int(torch.cuda.memory_allocated())
        have["cached"] = int(torch.cuda.memory_reserved())
    elif device == "mps":
        mps = getattr(torch, "mps", None)
        for key, fn in (("allocated", "current_allocated_memory"),
                        ("cached", "driver_allocated_memory")):
            if mps is not None and hasattr(mps, fn):
                have[key] = int(getattr(mps, fn)())
            else:
                lack.append(("torch.mps.%s" % fn, "absent in torch %s" % torch.__version__))
    else:
        lack.append(("device memory", "%s has no device allocator counters (host memory is "
                                      "the process RSS)" % device))
    return have, lack


def empty_cache(torch, device):
    """Return the device allocator's cached free memory to the driver: (done, why not).

    torch.cuda.empty_cache and torch.mps.empty_cache (2.0+); the CPU has no device cache."""
    mod = getattr(torch, device, None) if device in ("cuda", "mps") else None
    if mod is not None and hasattr(mod, "empty_cache"):
        mod.empty_cache()
        return True, ""
    if device == "cpu":
        return False, "the cpu has no device allocator cache"
    return False, "torch.%s.empty_cache is absent in torch %s" % (device, torch.__version__)


_PINNED = {}


def pinned_memory(torch, device):
    """Whether host tensors can be pinned for asynchronous copies to device: (ok, why not).

    Pinned (page-locked) host memory is what makes x.to(device, non_blocking=True) a truly
    asynchronous copy on CUDA (and a shared-storage buffer on MPS, where torch supports it).
    The CPU is not a copy target: x.to("cpu") returns x itself. Probed once per device with
    a one-element tensor; a torch or device that cannot pin says why."""
    if device == "cpu":
        return False, "the cpu is the host: x.to('cpu', non_blocking=True) returns x itself"
    if device not in _PINNED:
        try:
            ok = bool(torch.zeros(1).pin_memory().is_pinned())
            _PINNED[device] = (ok, "" if ok else "pin_memory() returned an unpinned tensor")
        except (RuntimeError, NotImplementedError) as exc:
            _PINNED[device] = (False, "pin_memory() failed in torch %s: %s" % (
                torch.__version__, first_line(exc)))
    return _PINNED[device]


def make_generator(torch, device, seed):
    """A generator on device seeded with seed; per-thread generators keep randn deterministic."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def gil_enabled():
    """True unless this is a free-threaded CPython (3.13t+) running with the GIL off."""
    probe = getattr(sys, "_is_gil_enabled", None)
    if probe is None:
        return True
    return bool(probe())


def device_name(torch, device):
    if device == "cuda":
        try:
            return torch.cuda.get_device_name()
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            return "cuda (name unavailable: %s)" % exc
    if device == "mps":
        mac = platform.mac_ver()[0] or "unknown macOS"
        return "Apple GPU via MPS (%s, macOS %s)" % (platform.machine(), mac)
    cpu = platform.processor() or platform.machine()
    return "%s, %d logical CPUs" % (cpu, os.cpu_count() or 0)


def read_provenance(torch_file):
    """The JSON that `mpspatch build` writes next to torch/__init__.py, or None."""
    path = os.path.join(os.path.dirname(os.path.abspath(torch_file)), PROVENANCE_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        return {"unreadable": "%s: %s" % (path, exc)}


def env_event(torch, device):
    version = getattr(torch, "version", None)
    return {
        "event": "env",
        "python": platform.python_version(),
        "gil": gil_enabled(),
        "torch": torch.__version__,
        "torch_git": getattr(version, "git_version", None) or "unknown",
        "torch_path": os.path.abspath(torch.__file__),
        "device": device,
        "device_name": device_name(torch, device),
        "platform": platform.platform(),
        "provenance": read_provenance(torch.__file__),
    }


def provenance_line(env):
    """One line naming the torch under test and where it came from (pytest header, bench)."""
    prov = env.get("provenance")
    if prov is None:
        origin = "no mpspatch provenance (stock or foreign build)"
    elif "unreadable" in prov:
        origin = "provenance unreadable: " + prov["unreadable"]
    else:
        # The stamp `mpspatch build` writes (docs/build.md): the patch list is shown as a count.
        keys = ("upstream_commit", "series_hash", "patches", "built_at")
        parts = ["%s=%s" % (k, len(prov[k]) if isinstance(prov[k], list) else prov[k])
                 for k in keys if k in prov]
        origin = "mpspatch provenance " + (" ".join(parts) if parts else json.dumps(prov, sort_keys=True))
    return "mpspatch: torch %s (git %s) at %s; %s" % (
        env["torch"], env["torch_git"], env["torch_path"], origin)


MIB = 1024 * 1024


def memory_growth(before, after, tolerances, lifetimes):
    """Judge memory counters measured after warm-up (before) and at the end (after).

    before, after and tolerances map a counter name ("rss", "allocated", "cached") to bytes;
    a counter missing from before or after is not judged. Returns (rows, problems): rows are
    (name, "X after warm-up, Y at the end, growth +Z (per thread lifetime; tolerance T MiB)")
    in MiB for the report, problems one message per counter that grew beyond its tolerance.
    """
    rows, problems = [], []
    for key in sorted(tolerances):
        if key not in before or key not in after:
            continue
        growth = after[key] - before[key]
        tol = tolerances[key]
        rows.append((key, "%.2f after warm-up, %.2f at the end, growth %+.3f (%+.2f KiB per "
                          "thread lifetime; tolerance %g MiB)" % (
                              before[key] / MIB, after[key] / MIB, growth / MIB,
                              growth / 1024.0 / max(1, lifetimes), tol / MIB)))
        if growth > tol:
            problems.append("%s memory grew by %.2f MiB over %d thread lifetimes after warm-up "
                            "(tolerance %g MiB)" % (key, growth / MIB, lifetimes, tol / MIB))
    return rows, problems


# Room for what the driver allocates besides tensors while threads start: command buffers,
# kernels and graphs compiled by new threads, allocator bookkeeping (KiB to a few MiB each).
MEMORY_SLACK = 64 * MIB


def memory_bound(allocated_n, cached_1, slack=MEMORY_SLACK):
    """The most a device allocator's cached (reserved, driver) memory may grow while n threads
    hold allocated_n bytes at once, given cached_1, its growth while one thread held its share.

    Why: an allocator shared by all threads (one set of heaps, with free lists per stream or
    one stream) reserves the live bytes plus at most the unused rest of the heap it grew last.
    One thread holding a share already made it create one heap of the size such allocations
    get (v2.9.1's MPS allocator: 1 GiB on a Mac's unified memory, 128 MiB on a discrete GPU,
    for 10-512 MiB allocations; CUDA: segments rounded to 2 MiB), so cached_1 covers that rest
    and allocated_n + cached_1 + slack holds. Heaps per stream reserve a heap per thread
    instead: 8 threads holding 24 MiB twice each reserve 8 GiB against a bound of 1.4 GiB on
    unified memory, 1 GiB against 0.56 GiB on a discrete GPU. Generous on purpose: a sanity
    check against that blow-up, not a measurement of the allocator's efficiency."""
    return allocated_n + cached_1 + slack


def elapsed_problem(elapsed_ms, wall_ms, slack_ms):
    """None when an event's elapsed_time is a possible time for work the host saw take
    wall_ms (finite, not negative, at most wall_ms + slack_ms), else what is wrong with it."""
    import math

    if elapsed_ms is None or not isinstance(elapsed_ms, (int, float)) or \
            not math.isfinite(elapsed_ms):
        return "elapsed_time %r is not a finite number" % (elapsed_ms,)
    if elapsed_ms < 0:
        return "elapsed_time %.3f ms is negative" % elapsed_ms
    if elapsed_ms > wall_ms + slack_ms:
        return "elapsed_time %.3f ms exceeds the %.3f ms the host saw around it" % (
            elapsed_ms, wall_ms)
    return None


# ---------------------------------------------------------------------------------------------
# Events for the Go runner: one JSON object per line, appended with a single write(2) on an
# O_APPEND descriptor so that a crash right after a line loses nothing and lines from several
# processes never interleave.


class EventLog:
    def __init__(self, path):
        self.path = path
        self._fd = None
        self._lock = threading.Lock()
        if path:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    @classmethod
    def from_env(cls, environ=None):
        environ = os.environ if environ is None else environ
        return cls(environ.get(EVENTS_ENV) or None)

    @property
    def enabled(self):
        return self._fd is not None

    def emit(self, obj):
        if self._fd is None:
            return
        line = (json.dumps(obj, sort_keys=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def child_environ(extra=None):
    """The environment for a child python: events and deselection belong to the parent."""
    env = dict(os.environ)
    env.pop(EVENTS_ENV, None)
    env.pop(DESELECT_ENV, None)
    if extra:
        env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# Deselection after a crash: the runner lists node IDs, one a line.


def nodeid_key(nodeid):
    """Strip any directory in front of the test file so ids match from any rootdir."""
    nodeid = nodeid.strip().replace("\\", "/")
    path, sep, rest = nodeid.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


def read_deselect(path):
    keys = set()
    with open(path, "r", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                keys.add(nodeid_key(line))
    return keys


def is_deselected(nodeid, keys):
    """A listed id deselects itself, and a listed id without [params] all its parametrizations."""
    key = nodeid_key(nodeid)
    if key in keys:
        return True
    base = key.split("[", 1)[0]
    return base != key and base in keys


# ---------------------------------------------------------------------------------------------
# Outcome of one test for the `end` event.


def classify(phases):
    """Reduce (when, outcome, assertion) triples of setup/call/teardown to one outcome.

    outcome is pytest's passed/failed/skipped; assertion is True when the exception was an
    AssertionError (a wrong result) or pytest.fail. A failure in call that is an assertion is
    "fail"; any other failure, or any failure in setup or teardown, is "error".
    """
    result = "pass"
    for when, outcome, assertion in phases:
        if outcome == "failed":
            if when == "call" and assertion:
                if result != "error":
                    result = "fail"
            else:
                result = "error"
        elif outcome == "skipped" and result == "pass":
            result = "skip"
    return result


def first_line(text, limit=300):
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


# ---------------------------------------------------------------------------------------------
# Result comparison. Every concurrent test compares each thread's outputs with a reference
# computed single-threaded before the threads started.

EXACT = {"exact": True, "rtol": 0.0, "atol": 0.0}
# Models and layers: the same kernels run in both passes, so results are normally bitwise
# equal; the tolerance absorbs libraries that may pick another algorithm or reduction split
# for a call (cuBLAS/cuDNN heuristics, CPU intra-op splits by thread count). Data races give
# errors many orders of magnitude larger.
MODEL_TOL = {"exact": False, "rtol": 1e-4, "atol": 1e-5}
# Comparing two different formulations of the same layer (F.linear against addmm).
CROSS_TOL = {"exact": False, "rtol": 1e-4, "atol": 1e-4}


def compare(have, want, tol, what="output"):
    """Return None when have matches want under tol, else a one-line description.

    have and want are tensors (any device) or nested lists/tuples of tensors.
    """
    if isinstance(want, (list, tuple)):
        if not isinstance(have, (list, tuple)) or len(have) != len(want):
            return "%s: have %s, want a sequence of %d" % (what, _describe(have), len(want))
        for i, (h, w) in enumerate(zip(have, want)):
            msg = compare(h, w, tol, "%s[%d]" % (what, i))
            if msg:
                return msg
        return None
    if have is None:
        return "%s: have None, want a tensor of shape %s" % (what, tuple(want.shape))
    h = have.detach().cpu()
    w = want.detach().cpu()
    if tuple(h.shape) != tuple(w.shape):
        return "%s: shape %s, want %s" % (what, tuple(h.shape), tuple(w.shape))
    if h.dtype != w.dtype:
        return "%s: dtype %s, want %s" % (what, h.dtype, w.dtype)
    if tol["exact"]:
        if _equal_with_nan(h, w):
            return None
        return "%s differs from the reference (exact compare): %s" % (what, _diff_summary(h, w))
    if h.is_floating_point():
        hn, wn = h.isnan(), w.isnan()
        if not bool((hn == wn).all()):
            return "%s: NaN where the reference has none (or the reverse)" % what
        h = h.masked_fill(hn, 0)
        w = w.masked_fill(wn, 0)
        import torch  # local: keeps this module importable for pure tests of other helpers

        if bool(torch.allclose(h, w, rtol=tol["rtol"], atol=tol["atol"])):
            return None
    elif bool((h == w).all()):
        return None
    return "%s differs from the reference beyond rtol=%g atol=%g: %s" % (
        what, tol["rtol"], tol["atol"], _diff_summary(h, w))


def _equal_with_nan(h, w):
    if h.is_floating_point():
        hn, wn = h.isnan(), w.isnan()
        if not bool((hn == wn).all()):
            return False
        return bool((h.masked_fill(hn, 0) == w.masked_fill(wn, 0)).all())
    return bool((h == w).all())


def _diff_summary(h, w):
    if h.numel() == 0:
        return "empty"
    diff = (h.double() - w.double()).abs()
    diff = diff.masked_fill(diff.isnan(), float("inf"))
    bad = int((diff > 0).sum())
    return "max abs diff %.3g, %d of %d elements differ" % (float(diff.max()), bad, h.numel())


def _describe(x):
    if isinstance(x, (list, tuple)):
        return "a sequence of %d" % len(x)
    return type(x).__name__


# Linear in float16/bfloat16 against a float32 reference on the CPU (test_linear.py). The
# bound is derived, not tuned: see low_precision_bound.


def unit_roundoff(torch, dtype):
    """u = 2**-p for p significand bits: 2**-11 float16, 2**-8 bfloat16, 2**-24 float32."""
    return torch.finfo(dtype).eps / 2


def gamma(n, u):
    """Higham's gamma_n = n u / (1 - n u)."""
    return n * u / (1 - n * u)


def low_precision_bound(torch, ref, scale, dtype, k):
    """The largest error a correct linear layer in dtype may have against the float32 reference.

    ref = b + sum_k x_k w_k computed in float32 on the CPU from the dtype-rounded inputs;
    scale = |b| + sum_k |x_k w_k|. A dot product of k terms plus a bias, computed in any order
    with any accumulator at least as precise as dtype, is within gamma_(k+2)(u) * scale of the
    exact value (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1: k products
    and k-1 additions, one more for the bias, and one for a separate rounding of the product
    before the bias is added, mm then add), plus u |ref| for the final rounding to dtype; the
    reference's own float32 error is within gamma_(k+2)(2**-24) * scale; and underflow in the
    products adds at most k+2 of dtype's smallest subnormal. The bound cannot flag a correct
    result however the device sums; a race, a stale buffer or a wrong kernel is off by the size
    of the values, far beyond it."""
    u = unit_roundoff(torch, dtype)
    fi = torch.finfo(dtype)
    tiny = fi.tiny * fi.eps
    return (gamma(k + 2, u) + gamma(k + 2, 2.0 ** -24)) * scale + u * ref.abs() + (k + 2) * tiny


def low_precision_problem(torch, have, ref, scale, dtype, k, what):
    """None when have (a dtype tensor) is within low_precision_bound of ref, else why not."""
    h = have.detach().cpu()
    if h.dtype != dtype:
        return "%s: dtype %s, want %s" % (what, h.dtype, dtype)
    if tuple(h.shape) != tuple(ref.shape):
        return "%s: shape %s, want %s" % (what, tuple(h.shape), tuple(ref.shape))
    diff = (h.float() - ref).abs()
    bound = low_precision_bound(torch, ref, scale, dtype, k)
    bad = ~(diff <= bound)  # NaN is bad too
    if not bool(bad.any()):
        return None
    ratio = torch.where(bad, (diff / bound).nan_to_num(float("inf")), torch.zeros_like(diff))
    worst = int(torch.argmax(ratio.flatten()))
    return "%s: %d of %d elements beyond the %s bound; worst: %r against %r (bound %.3g)" % (
        what, int(bad.sum()), h.numel(), str(dtype).replace("torch.", ""),
        float(h.float().flatten()[worst]), float(ref.flatten()[worst]),
        float(bound.flatten()[worst]))


def rounding_stats(torch, have, ref, scale, dtype):
    """(elements that are not the correctly rounded reference, elements, largest error in units
    of u * scale): a measurement, reported and never judged. A single rounding of an exact (or
    float32-accumulated) result is almost always the correctly rounded value; rounding twice
    (mm then add) or accumulating in dtype moves many elements off it."""
    h = have.detach().cpu().float()
    off = int((h != ref.to(dtype).float()).sum())
    u = unit_roundoff(torch, dtype)
    err = ((h - ref).abs() / (u * scale.clamp(min=torch.finfo(torch.float32).tiny))).max()
    return off, h.numel(), float(err)


def check_threads(results, references, tol, what="thread"):
    """Compare results[i] with references[i] for every thread; raise AssertionError listing
    every thread that differs (wrong results are failures, not errors)."""
    bad = []
    for tid, (have, want) in enumerate(zip(results, references)):
        msg = compare(have, want, tol, "%s %d" % (what, tid))
        if msg:
            bad.append(msg)
    if len(results) != len(references):
        bad.append("%d results for %d references" % (len(results), len(references)))
    if bad:
        raise AssertionError("%d of %d %ss gave wrong results; first: %s" % (
            len(bad), len(references), what, bad[0]))


# ---------------------------------------------------------------------------------------------
# Running workers together.


class ThreadsFailed(RuntimeError):
    """Some worker threads raised (an error, not a wrong result)."""


class ThreadsHung(RuntimeError):
    """Some worker threads did not finish within the join timeout."""


def run_threads(n, worker, timeout, barrier=True):
    """Run worker(tid) on n threads that start together behind a Barrier; return results by tid.

    Exceptions in workers are collected and re-raised as ThreadsFailed naming how many threads
    raised and the first traceback line; threads still alive after timeout raise ThreadsHung.
    Threads are daemons, so a hang cannot keep the interpreter alive.
    """
    gate = threading.Barrier(n) if barrier else None
    results = [None] * n
    errors = [None] * n

    def body(tid):
        try:
            if gate is not None:
                gate.wait(timeout)
            results[tid] = worker(tid)
        except BaseException as exc:  # noqa: BLE001 - everything is reported
            errors[tid] = (exc, traceback.format_exc())

    threads = [threading.Thread(target=body, args=(i,), name="mpspatch-%d" % i, daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        raise ThreadsHung("%d of %d threads still running after %.0fs: %s" % (
            len(alive), n, timeout, ", ".join(alive[:4])))
    raised = [(i, e) for i, e in enumerate(errors) if e is not None]
    if raised:
        tid, (exc, tb) = raised[0]
        if isinstance(exc, AssertionError):
            raise exc
        raise ThreadsFailed("%d of %d threads raised; thread %d: %s: %s" % (
            len(raised), n, tid, type(exc).__name__, first_line(exc) or "(no message)")) from exc
    return results


class Background:
    """run_threads(n, worker, timeout) on a thread of its own, so that the calling thread can
    work alongside the workers (read what they hand over, measure while they hold memory).
    result() joins it and returns the workers' results or raises what run_threads raised."""

    def __init__(self, n, worker, timeout):
        self._box = []
        self._timeout = timeout
        self._thread = threading.Thread(target=self._run, args=(n, worker, timeout),
                                        name="mpspatch-runner", daemon=True)
        self._thread.start()

    def _run(self, n, worker, timeout):
        try:
            self._box.append((True, run_threads(n, worker, timeout)))
        except BaseException as exc:  # noqa: BLE001 - handed to result()
            self._box.append((False, exc))

    def result(self):
        # run_threads gives up on its workers after timeout; a little more for its own return.
        self._thread.join(self._timeout + 30)
        if self._thread.is_alive():
            raise ThreadsHung("workers still running after %.0fs" % self._timeout)
        ok, value = self._box[0]
        if not ok:
            raise value
        return value


# ---------------------------------------------------------------------------------------------
# Thread-boundary search: the largest thread count that passes for an op class.


def boundary_first_plan(lo, hi, plan):
    """Thread counts for the first probe run, ascending.

    dense probes every count lo..hi; gallop probes lo, 2lo, 4lo, ... and hi, refining later.
    A probe run stops at its first failure (it may have crashed), so order matters.
    """
    if lo < 1 or hi < lo:
        raise ValueError("bad boundary range %d..%d" % (lo, hi))
    if plan == "dense":
        return list(range(lo, hi + 1))
    if plan != "gallop":
        raise ValueError("unknown boundary plan %r" % plan)
    out, n = [], lo
    while n < hi:
        out.append(n)
        n *= 2
    out.append(hi)
    return out


def boundary_next(outcomes, lo, hi):
    """Given {count: passed} from earlier probe runs, the counts to probe next (ascending), or
    [] when the boundary is known: the gap between the largest passing count below the first
    failure and that failure."""
    fails = sorted(n for n, ok in outcomes.items() if not ok)
    first_fail = fails[0] if fails else None
    if first_fail is None:
        untested = [n for n in range(lo, hi + 1) if n not in outcomes]
        return [] if hi in outcomes else untested
    below = [n for n, ok in outcomes.items() if ok and n < first_fail]
    last_pass = max(below) if below else lo - 1
    return [n for n in range(last_pass + 1, first_fail) if n not in outcomes]


def boundary_value(outcomes, lo):
    """Largest count c such that every probed count <= c passed (lo-1 when lo itself failed)."""
    best = lo - 1
    for n in sorted(outcomes):
        if not outcomes[n]:
            break
        best = n
    return best


def search_boundary(probe, lo, hi, plan):
    """Find the thread boundary with probe(counts) -> [(n, ok, message)], which runs counts in
    order and stops after the first failure; a count missing from its answer (the probe died
    there) counts as failed with the probe's last words. Returns (boundary, outcomes, message)."""
    outcomes, message = {}, ""
    counts = boundary_first_plan(lo, hi, plan)
    while counts:
        answers, why = probe(counts)
        seen = {n: (ok, msg) for n, ok, msg in answers}
        for n in counts:
            if n not in seen:
                outcomes[n] = False
                message = "%d threads: %s" % (n, why)
                break
            ok, msg = seen[n]
            outcomes[n] = bool(ok)
            if not ok:
                message = "%d threads: %s" % (n, msg)
                break
        counts = boundary_next(outcomes, lo, hi)
    return boundary_value(outcomes, lo), outcomes, message


# ---------------------------------------------------------------------------------------------
# Scaling analysis (bench_scaling.py): pure functions over measured numbers.

SCALING_EFFICIENCY = 0.7   # efficiency at or above this: the curve still scales
SATURATION_GAIN = 0.05     # within 5% of the best throughput counts as saturated


def efficiency(fps_n, fps_1, n):
    """T(n) / (n * T(1))."""
    if fps_1 <= 0 or n <= 0:
        return 0.0
    return fps_n / (n * fps_1)


def saturation_point(rows):
    """rows: [(threads, fps)] in any order. The smallest thread count whose throughput is within
    SATURATION_GAIN (5%) of the best: where the curve stops rising. Robust to a noisy dip before
    the peak; the largest count when throughput keeps rising to the end."""
    if not rows:
        return None
    best = max(fps for _, fps in rows)
    return min(n for n, fps in rows if fps >= best * (1.0 - SATURATION_GAIN))


def ceiling(host_ms, device_ms):
    """Best speed-up over one thread that threads can reach, bounded by the device.

    One thread pays host + device time per forward (it waits for its result). Threads can hide
    one thread's host time behind another's device time, but the device queue (one per device:
    the CUDA default stream, the MPS stream of a stock build) runs device work one forward at a
    time, so throughput stays below 1/device: the speed-up is at most (host + device) / device.
    None when device time is unknown (zero)."""
    if device_ms <= 0:
        return None
    return (host_ms + device_ms) / device_ms


def gil_ceiling(host_ms, device_ms):
    """The same bound if the GIL serialized all host work: (host + device) / max(host, device),
    never above 2. Measured speed-ups above it show host work overlapping (ATen releases the
    GIL while an op runs), below it contention (GIL hand-offs, queue locks)."""
    if host_ms <= 0 and device_ms <= 0:
        return None
    return (host_ms + device_ms) / max(host_ms, device_ms)


def label(eff, host_ms, device_ms):
    """scaling when efficiency holds up; else host-bound or device-bound by the larger side."""
    if eff >= SCALING_EFFICIENCY:
        return "scaling"
    return "host-bound" if host_ms >= device_ms else "device-bound"


# ---------------------------------------------------------------------------------------------
# Fresh python processes (suite_child.py).

CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suite_child.py")


def describe_exit(returncode):
    """"exit 3", "killed by SIGSEGV" and friends, for messages."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        import signal

        try:
            return "killed by %s" % signal.Signals(-returncode).name
        except ValueError:
            return "killed by signal %d" % -returncode
    return "exit %d" % returncode


def parse_child_lines(text):
    """JSON objects printed one a line by a child; other lines (warnings) are skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


class ChildResult:
    def __init__(self, returncode, lines, stderr, timed_out):
        self.returncode = returncode
        self.lines = lines
        self.stderr = stderr
        self.timed_out = timed_out

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    missed = ""  # stream_child: the deadline the child missed

    def why(self):
        if self.timed_out:
            return "hung: %s (probe killed)" % self.missed if self.missed else "child timed out"
        tail = [l for l in self.stderr.strip().splitlines() if l.strip()][-3:]
        return "child %s%s" % (describe_exit(self.returncode),
                               (": " + " | ".join(tail)) if tail else "")


def start_child(req, extra_env=None):
    import subprocess

    return subprocess.Popen([sys.executable, CHILD_SCRIPT, json.dumps(req)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_environ(extra_env), universal_newlines=True)


def finish_child(proc, timeout):
    import subprocess

    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        timed_out = True
    return ChildResult(proc.returncode, parse_child_lines(out), err, timed_out)


def run_child(req, timeout, extra_env=None):
    return finish_child(start_child(req, extra_env), timeout)


def count_timeout(join_timeout, environ=None):
    """How long a boundary probe may go without answering for one thread count: the workers'
    join timeout and a margin for the check, but under the runner's per-test limit
    ($MPSPATCH_TEST_TIMEOUT seconds), which kills the whole test, and every answer with it,
    when it hears nothing for that long."""
    limit = join_timeout + 30.0
    raw = (os.environ if environ is None else environ).get("MPSPATCH_TEST_TIMEOUT", "")
    try:
        runner = float(raw)
    except ValueError:
        runner = 0.0
    if runner > 0:
        limit = min(limit, runner * 0.8)
    return max(limit, 1.0)


def stream_child(proc, first_timeout, each_timeout, want, on_line=None, last=None):
    """Read a child's JSON lines as they come, giving it first_timeout for its first answer
    (interpreter start, imports, references) and each_timeout for every later one; want(line)
    says whether a line is an answer. A child that misses a deadline is killed there, so one
    hung answer costs each_timeout, not the whole run. on_line(line) sees each answer at once;
    after an answer for which last(line) is true the child is not waited for (killed).
    Returns a ChildResult; timed_out says a deadline was missed, and its stderr ends with
    which one."""
    import queue
    import threading as _threading

    q = queue.Queue()

    def pump(stream, tag):
        for line in stream:
            q.put((tag, line))
        q.put((tag, None))

    readers = [_threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
               _threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    lines, err, open_streams, timed_out, missed = [], [], 2, False, ""
    deadline = time.monotonic() + first_timeout
    answered = 0
    while open_streams:
        try:
            tag, line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            timed_out = True
            missed = "no answer within %.0fs" % (first_timeout if answered == 0 else each_timeout)
            proc.kill()
            break
        if line is None:
            open_streams -= 1
            continue
        if tag == "err":
            err.append(line)
            continue
        for obj in parse_child_lines(line):
            lines.append(obj)
            if want(obj):
                answered += 1
                deadline = time.monotonic() + each_timeout
                if on_line is not None:
                    on_line(obj)
                if last is not None and last(obj):
                    open_streams = 0
                    break
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for r in readers:
        r.join(5)
    while not q.empty():
        tag, line = q.get_nowait()
        if tag == "err" and line is not None:
            err.append(line)
    stderr = "".join(err)
    if timed_out:
        stderr += "\n" + missed + "\n"
    result = ChildResult(proc.returncode, lines, stderr, timed_out)
    result.missed = missed
    return result

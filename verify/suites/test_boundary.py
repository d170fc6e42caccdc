"""Thread-boundary finder (seed: test_thread_boundary.py; the N=36 table of raw ops vs
nn.Linear at 2..8 threads). For each op class, the largest thread count in 1..16 at which
every count up to it passes. Probes run in fresh processes, so a segfault at n threads is a
data point (the boundary is below n), not the end of the run. The quick profile gallops
(1, 2, 4, 8, 16) and then probes every count in the gap below the first failure; the full
profile probes every count 1..16. The table goes to the event log as "boundary" events, to
the test's user properties and to the terminal summary; the test fails unless every op class
reaches 16 (the project's goal is 8+ concurrent forwards, and the control device reaches 16).
"""

import suite_harness as H
import suite_work as W

LO, HI = 1, 16
BOUNDARIES = {}


def find_boundary(settings, op, emit=lambda event: None):
    """Return (boundary, {count: passed}, message of the first failure)."""

    # Each count gets its own deadline, under the runner's per-test limit, and each answer is
    # an event the runner sees as progress: a count that hangs costs one deadline and is the
    # failure above the boundary, instead of the runner killing the whole test unreported.
    each = H.count_timeout(settings["join_timeout"])

    def probe(counts):
        req = {"cmd": "boundary", "device": settings.device, "op": op, "counts": counts,
               "iters": settings["boundary_iters"], "knobs": settings.knobs,
               "timeout": min(settings["join_timeout"], max(1.0, each - 10.0))}
        child = H.stream_child(H.start_child(req), min(settings["child_timeout"], each), each,
                               want=lambda l: "threads" in l,
                               on_line=lambda l: emit({"event": "boundary_probe", "op": op,
                                                       "threads": l["threads"], "ok": l["ok"]}),
                               last=lambda l: not l["ok"])
        answers = [(l["threads"], l["ok"], l["message"]) for l in child.lines if "threads" in l]
        return answers, child.why()

    return H.search_boundary(probe, LO, HI, settings["boundary_plan"])


def test_thread_boundary(settings, events, request):
    failures = []
    for op in W.BOUNDARY_OPS:
        value, outcomes, message = find_boundary(settings, op, events.emit)
        BOUNDARIES[op] = (value, outcomes, message)
        events.emit({"event": "boundary", "op": op, "threads": value, "max": HI,
                     "device": settings.device,
                     "probes": {str(k): v for k, v in sorted(outcomes.items())},
                     "message": message})
        request.node.user_properties.append(("boundary_" + op, value))
        if value < HI:
            failures.append("%s: %d (%s)" % (op, value, message))
    assert not failures, "op classes below %d threads: %s" % (HI, "; ".join(failures))


def pytest_terminal_summary_lines():
    lines = []
    for op, (value, outcomes, message) in BOUNDARIES.items():
        probed = " ".join("%d%s" % (n, "" if ok else "x") for n, ok in sorted(outcomes.items()))
        lines.append("%-12s %2d   probed %s%s" % (op, value, probed,
                                                  ("   " + message) if message else ""))
    return lines

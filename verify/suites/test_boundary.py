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


def find_boundary(settings, op):
    """Return (boundary, {count: passed}, last failure message)."""
    outcomes, message = {}, ""
    probes = H.boundary_first_plan(LO, HI, settings["boundary_plan"])
    while probes:
        req = {"cmd": "boundary", "device": settings.device, "op": op, "counts": probes,
               "iters": settings["boundary_iters"], "knobs": settings.knobs,
               "timeout": settings["join_timeout"]}
        child = H.run_child(req, settings["child_timeout"])
        seen = {l["threads"]: l for l in child.lines if "threads" in l}
        for n in probes:
            if n in seen:
                outcomes[n] = bool(seen[n]["ok"])
                if not seen[n]["ok"]:
                    message = "%d threads: %s" % (n, seen[n]["message"])
                    break
            else:
                # The child died running n threads (it prints a line after each count).
                outcomes[n] = False
                message = "%d threads: %s" % (n, child.why())
                break
        probes = H.boundary_next(outcomes, LO, HI)
    return H.boundary_value(outcomes, LO), outcomes, message


def test_thread_boundary(settings, events, record_property):
    failures = []
    for op in W.BOUNDARY_OPS:
        value, outcomes, message = find_boundary(settings, op)
        BOUNDARIES[op] = (value, outcomes, message)
        events.emit({"event": "boundary", "op": op, "threads": value, "max": HI,
                     "device": settings.device,
                     "probes": {str(k): v for k, v in sorted(outcomes.items())},
                     "message": message})
        record_property("boundary_" + op, value)
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

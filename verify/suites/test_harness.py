"""Tests of the suites' own machinery (pure functions; fast; no device work)."""

import json
import os
import threading
import time

import pytest
import torch

import suite_harness as H


@pytest.mark.parametrize("text,want", [
    ("2,4,8", [2, 4, 8]),
    (" 8, 2,2 ,", [2, 8]),
    ("16", [16]),
    ("", None),
    (None, None),
])
def test_parse_threads(text, want):
    assert H.parse_threads(text) == want


@pytest.mark.parametrize("text", ["0", "2,x", "-1", ",,"])
def test_parse_threads_rejects(text):
    with pytest.raises(ValueError):
        H.parse_threads(text)


@pytest.mark.parametrize("phases,want", [
    ([("setup", "passed", False), ("call", "passed", False), ("teardown", "passed", False)],
     "pass"),
    ([("setup", "passed", False), ("call", "failed", True), ("teardown", "passed", False)],
     "fail"),
    ([("setup", "passed", False), ("call", "failed", False), ("teardown", "passed", False)],
     "error"),
    ([("setup", "failed", False), ("teardown", "passed", False)], "error"),
    ([("setup", "failed", True)], "error"),
    ([("setup", "skipped", False), ("teardown", "passed", False)], "skip"),
    ([("setup", "passed", False), ("call", "failed", True), ("teardown", "failed", False)],
     "error"),
    ([("setup", "passed", False), ("call", "passed", False), ("teardown", "failed", True)],
     "error"),
])
def test_classify(phases, want):
    assert H.classify(phases) == want


@pytest.mark.parametrize("nodeid,listed,want", [
    ("test_a.py::test_x[t2]", ["test_a.py::test_x[t2]"], True),
    ("test_a.py::test_x[t2]", ["verify/suites/test_a.py::test_x[t2]"], True),
    ("test_a.py::test_x[t2]", ["test_a.py::test_x"], True),
    ("test_a.py::test_x[t2]", ["test_a.py::test_x[t4]"], False),
    ("test_a.py::test_xy[t2]", ["test_a.py::test_x"], False),
    ("test_a.py::test_x", ["test_a.py::test_x[t2]"], False),
    ("test_b.py::test_x", ["test_a.py::test_x"], False),
])
def test_is_deselected(nodeid, listed, want):
    keys = {H.nodeid_key(l) for l in listed}
    assert H.is_deselected(nodeid, keys) == want


def test_read_deselect(tmp_path):
    path = tmp_path / "deselect"
    path.write_text("# crashed\n\nverify/suites/test_a.py::test_x[t8]\n  test_b.py::test_y \n")
    assert H.read_deselect(str(path)) == {"test_a.py::test_x[t8]", "test_b.py::test_y"}


T = torch.tensor


@pytest.mark.parametrize("have,want,tol,ok", [
    (T([1.0, 2.0]), T([1.0, 2.0]), H.EXACT, True),
    (T([1.0, 2.0]), T([1.0, 2.0 + 1e-6]), H.EXACT, False),
    (T([1.0, 2.0]), T([1.0, 2.0 + 1e-6]), H.MODEL_TOL, True),
    (T([1.0, 2.0]), T([1.0, 2.1]), H.MODEL_TOL, False),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), H.EXACT, True),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), H.MODEL_TOL, True),
    (T([1.0, float("nan")]), T([1.0, 2.0]), H.MODEL_TOL, False),
    (T([1.0, 2.0]), T([1.0, float("nan")]), H.EXACT, False),
    (T([1.0, 2.0]), T([[1.0, 2.0]]), H.MODEL_TOL, False),
    (T([1, 2]), T([1.0, 2.0]), H.MODEL_TOL, False),
    (T([1, 2]), T([1, 2]), H.MODEL_TOL, True),
    (T([1, 2]), T([1, 3]), H.MODEL_TOL, False),
    ([T([1.0]), T([2.0])], [T([1.0]), T([2.0])], H.EXACT, True),
    ([T([1.0]), T([2.5])], [T([1.0]), T([2.0])], H.EXACT, False),
    ([T([1.0])], [T([1.0]), T([2.0])], H.EXACT, False),
    (None, T([1.0]), H.EXACT, False),
])
def test_compare(have, want, tol, ok):
    msg = H.compare(have, want, tol)
    assert (msg is None) == ok, msg


def test_compare_message_names_the_difference():
    msg = H.compare(T([1.0, 2.0, 3.0]), T([1.0, 2.5, 3.0]), H.EXACT, "thread 3")
    assert msg.startswith("thread 3 ")
    assert "max abs diff 0.5" in msg
    assert "1 of 3 elements differ" in msg


def test_check_threads_reports_every_bad_thread():
    refs = [[T([1.0])], [T([2.0])], [T([3.0])]]
    have = [[T([1.0])], [T([9.0])], [T([8.0])]]
    with pytest.raises(AssertionError) as exc:
        H.check_threads(have, refs, H.EXACT)
    assert "2 of 3 threads gave wrong results" in str(exc.value)
    assert "thread 1" in str(exc.value)
    H.check_threads(refs, refs, H.EXACT)


def test_run_threads_returns_results_by_thread_id():
    assert H.run_threads(5, lambda tid: tid * 10, timeout=30) == [0, 10, 20, 30, 40]


def test_run_threads_runs_workers_concurrently():
    # Each worker waits for all the others: this only completes if they all run at once.
    inner = threading.Barrier(8)
    assert H.run_threads(8, lambda tid: inner.wait(30) is not None, timeout=60) == [True] * 8


def test_run_threads_reports_raising_threads():
    def worker(tid):
        if tid % 2:
            raise RuntimeError("boom %d" % tid)
        return tid

    with pytest.raises(H.ThreadsFailed) as exc:
        H.run_threads(4, worker, timeout=30)
    assert "2 of 4 threads raised" in str(exc.value)
    assert "RuntimeError: boom 1" in str(exc.value)


def test_run_threads_keeps_assertions_as_failures():
    def worker(tid):
        assert tid != 1, "wrong result in thread 1"

    with pytest.raises(AssertionError, match="wrong result in thread 1"):
        H.run_threads(3, worker, timeout=30)


def test_run_threads_reports_hung_threads():
    release = threading.Event()
    try:
        with pytest.raises(H.ThreadsHung, match="1 of 2 threads still running"):
            H.run_threads(2, lambda tid: release.wait(60) if tid else None, timeout=0.5)
    finally:
        release.set()


@pytest.mark.parametrize("lo,hi,plan,want", [
    (1, 16, "dense", list(range(1, 17))),
    (1, 16, "gallop", [1, 2, 4, 8, 16]),
    (1, 12, "gallop", [1, 2, 4, 8, 12]),
    (3, 3, "gallop", [3]),
])
def test_boundary_first_plan(lo, hi, plan, want):
    assert H.boundary_first_plan(lo, hi, plan) == want


@pytest.mark.parametrize("outcomes,want_next,want_value", [
    ({1: True, 2: True, 4: True, 8: True, 16: True}, [], 16),
    ({1: True, 2: True, 4: True, 8: False}, [5, 6, 7], 4),
    ({1: True, 2: True, 4: True, 8: False, 5: True, 6: False}, [], 5),
    ({1: False}, [], 0),
    ({1: True, 2: True, 4: True, 8: True, 16: False}, list(range(9, 16)), 8),
    ({1: True, 2: True, 3: True}, list(range(4, 17)), 3),
])
def test_boundary_next_and_value(outcomes, want_next, want_value):
    assert H.boundary_next(outcomes, 1, 16) == want_next
    assert H.boundary_value(outcomes, 1) == want_value


@pytest.mark.parametrize("plan", ["dense", "gallop"])
@pytest.mark.parametrize("true_boundary", range(0, 17))
def test_search_boundary_finds_every_boundary(plan, true_boundary):
    """A fake probe that passes up to true_boundary threads and then "crashes" half of the
    time (no answer for the failing count) must lead the search to exactly true_boundary."""
    runs = []

    def probe(counts):
        runs.append(list(counts))
        answers = []
        for n in counts:
            if n <= true_boundary:
                answers.append((n, True, ""))
            else:
                if n % 2:
                    answers.append((n, False, "wrong result"))
                return answers, "child killed by SIGSEGV"
        return answers, ""

    value, outcomes, message = H.search_boundary(probe, 1, 16, plan)
    assert value == true_boundary
    if true_boundary < 16:
        assert message.startswith("%d threads: " % (true_boundary + 1))
        assert outcomes[true_boundary + 1] is False
    else:
        assert message == ""
    if plan == "gallop":
        assert len(runs) <= 2



# A stand-in for suite_child.py's boundary command: answers each count at once, and hangs
# (as a deadlocked device would) from the count hang_at up.
FAKE_BOUNDARY_CHILD = """
import json, sys, time
req = json.loads(sys.argv[1])
for n in req["counts"]:
    if n >= req["hang_at"]:
        time.sleep(3600)
    print(json.dumps({"threads": n, "ok": True, "message": ""}), flush=True)
"""


@pytest.mark.parametrize("plan", ["dense", "gallop"])
def test_boundary_below_a_count_that_hangs(tmp_path, plan):
    """Issue 21: one hung count made the whole boundary test time out with no boundary. Each
    count now has its own deadline; the search reports the largest passing count and the hang
    at the next, and every answer is seen as it comes (the runner's progress)."""
    import subprocess
    import sys

    script = tmp_path / "child.py"
    script.write_text(FAKE_BOUNDARY_CHILD)
    seen = []

    def probe(counts):
        proc = subprocess.Popen([sys.executable, str(script), json.dumps({"counts": counts, "hang_at": 6})],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        # The first answer may wait for a loaded machine; later ones come at once, unless hung.
        child = H.stream_child(proc, 120, 3, want=lambda l: "threads" in l, on_line=seen.append,
                               last=lambda l: not l["ok"])
        assert proc.returncode is not None, "the hung child was left running"
        return [(l["threads"], l["ok"], l["message"]) for l in child.lines], child.why()

    value, outcomes, message = H.search_boundary(probe, 1, 16, plan)
    assert value == 5
    assert outcomes[6] is False
    assert message == "6 threads: hung: no answer within 3s (probe killed)"
    assert sorted(l["threads"] for l in seen) == sorted(n for n, ok in outcomes.items() if ok)


@pytest.mark.parametrize("join,runner,want", [
    (120.0, None, 150.0),      # no runner limit: the join timeout and a margin
    (120.0, "300", 150.0),     # under the runner's default 5 minutes
    (120.0, "60", 48.0),       # a short --timeout: 80% of it, so the runner hears an answer first
    (120.0, "0", 150.0),       # --timeout 0: no limit
    (120.0, "junk", 150.0),
    (1.0, "0.5", 1.0),         # never below a second
])
def test_count_timeout(join, runner, want):
    env = {} if runner is None else {"MPSPATCH_TEST_TIMEOUT": runner}
    assert H.count_timeout(join, env) == want


@pytest.mark.parametrize("rows,want", [
    ([(1, 100.0), (2, 190.0), (4, 370.0), (8, 700.0)], 8),
    ([(1, 100.0), (2, 150.0), (4, 152.0), (8, 151.0)], 2),
    ([(4, 152.0), (1, 100.0), (2, 150.0)], 2),
    ([(1, 100.0), (2, 90.0)], 1),
    ([(1, 345.0), (2, 262.0), (4, 673.0), (8, 650.0)], 4),
    ([(1, 100.0), (2, 196.0), (4, 200.0)], 2),
    ([(1, 100.0)], 1),
    ([], None),
])
def test_saturation_point(rows, want):
    assert H.saturation_point(rows) == want


def test_efficiency():
    assert H.efficiency(400.0, 100.0, 4) == 1.0
    assert H.efficiency(200.0, 100.0, 4) == 0.5
    assert H.efficiency(10.0, 0.0, 4) == 0.0


@pytest.mark.parametrize("host,device,want,want_gil", [
    (1.0, 1.0, 2.0, 2.0),
    (3.0, 1.0, 4.0, 4.0 / 3.0),
    (1.0, 3.0, 4.0 / 3.0, 4.0 / 3.0),
    (0.5, 0.2, 3.5, 1.4),
    (1.0, 0.0, None, 1.0),
    (0.0, 0.0, None, None),
])
def test_ceiling(host, device, want, want_gil):
    for have, w in ((H.ceiling(host, device), want), (H.gil_ceiling(host, device), want_gil)):
        if w is None:
            assert have is None
        else:
            assert have == pytest.approx(w)


@pytest.mark.parametrize("eff,host,device,want", [
    (0.9, 5.0, 1.0, "scaling"),
    (0.7, 5.0, 1.0, "scaling"),
    (0.3, 5.0, 1.0, "host-bound"),
    (0.3, 1.0, 5.0, "device-bound"),
])
def test_label(eff, host, device, want):
    assert H.label(eff, host, device) == want


def test_event_log_appends_one_json_object_a_line(tmp_path):
    path = str(tmp_path / "events.jsonl")
    with open(path, "w") as fh:
        fh.write('{"event": "earlier"}\n')
    log = H.EventLog(path)
    threads = [threading.Thread(target=lambda i=i: [log.emit({"event": "x", "i": i, "k": k})
                                                     for k in range(50)]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    with open(path) as fh:
        lines = [json.loads(line) for line in fh]
    assert lines[0] == {"event": "earlier"}
    assert len(lines) == 201
    assert sorted((l["i"], l["k"]) for l in lines[1:]) == [(i, k) for i in range(4)
                                                          for k in range(50)]


def test_event_log_disabled_without_env():
    log = H.EventLog.from_env({})
    assert not log.enabled
    log.emit({"event": "ignored"})


def test_child_environ_drops_runner_files(monkeypatch):
    monkeypatch.setenv(H.EVENTS_ENV, "/tmp/e")
    monkeypatch.setenv(H.DESELECT_ENV, "/tmp/d")
    env = H.child_environ({"X": "1"})
    assert H.EVENTS_ENV not in env and H.DESELECT_ENV not in env and env["X"] == "1"


def test_read_provenance(tmp_path):
    torch_file = str(tmp_path / "__init__.py")
    assert H.read_provenance(torch_file) is None
    (tmp_path / H.PROVENANCE_FILE).write_text('{"commit": "d38164a", "patches": 7}')
    assert H.read_provenance(torch_file) == {"commit": "d38164a", "patches": 7}
    (tmp_path / H.PROVENANCE_FILE).write_text("{not json")
    assert "unreadable" in H.read_provenance(torch_file)


def test_provenance_line():
    env = {"torch": "2.9.1", "torch_git": "d38164a", "torch_path": "/t/__init__.py",
           "provenance": {"upstream_commit": "d38164a", "series_hash": "4f1c0d9e",
                          "patches": ["0001-stream-pool.patch", "0002-per-stream-locking.patch"],
                          "built_at": "2025-12-12T10:30:00Z", "python": "/usr/bin/python3"}}
    assert H.provenance_line(env) == (
        "mpspatch: torch 2.9.1 (git d38164a) at /t/__init__.py; "
        "mpspatch provenance upstream_commit=d38164a series_hash=4f1c0d9e patches=2 "
        "built_at=2025-12-12T10:30:00Z")
    env["provenance"] = None
    assert H.provenance_line(env).endswith("no mpspatch provenance (stock or foreign build)")


@pytest.mark.parametrize("code,want", [
    (0, "exit 0"), (3, "exit 3"), (-11, "killed by SIGSEGV"), (-6, "killed by SIGABRT"),
    (None, "still running"),
])
def test_describe_exit(code, want):
    assert H.describe_exit(code) == want


def test_parse_child_lines_skips_noise():
    text = 'UserWarning: something\n{"threads": 2, "ok": true}\n{broken\n\n{"ok": false}\n'
    assert H.parse_child_lines(text) == [{"threads": 2, "ok": True}, {"ok": False}]


def test_env_event_fields(settings):
    env = H.env_event(torch, settings.device)
    for key in ("python", "gil", "torch", "torch_git", "torch_path", "device", "device_name",
                "platform", "provenance"):
        assert key in env
    assert env["event"] == "env"
    assert os.path.basename(env["torch_path"]) == "__init__.py"


class _RacyWork:
    """A workload with a deliberate data race: every thread writes its id into one shared
    buffer, waits until all have written, then reads it back. Single-threaded it is correct."""

    tol = H.EXACT

    def __init__(self, n):
        self.shared = torch.zeros(4)
        self.inner = threading.Barrier(n)

    def reference(self, threads, iters):
        return [[torch.full((4,), float(t))] for t in range(threads)]

    def run(self, tid, iters):
        self.shared.fill_(float(tid))
        self.inner.wait(30)
        return [self.shared.clone()]


def test_run_and_check_catches_a_race():
    import suite_work as W

    with pytest.raises(AssertionError, match="of 4 threads gave wrong results"):
        W.run_and_check(_RacyWork(4), 4, 1, timeout=60)


_SAMPLE = '''
import pytest

def test_pass():
    pass

def test_wrong_result():
    assert 1 + 1 == 3, "wrong sum"

def test_raises():
    raise RuntimeError("MPS exploded\\nsecond line")

def test_skipped():
    pytest.skip("not on this device")

@pytest.fixture
def broken():
    raise OSError("setup went wrong")

def test_setup_error(broken):
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_crashed_before(n):
    pass

def test_after_the_crash():
    pass
'''


def test_conftest_writes_the_runner_protocol(tmp_path):
    """Run pytest on a sample file with this directory's conftest: the events file must hold
    env first, then start/end per test with pass/fail/error/skip, and the deselect file must
    remove the tests the runner lists."""
    import shutil
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("conftest.py", "suite_harness.py", "pytest.ini"):
        shutil.copy(os.path.join(here, name), str(tmp_path / name))
    (tmp_path / "test_sample.py").write_text(_SAMPLE)
    events = tmp_path / "events.jsonl"
    deselect = tmp_path / "deselect"
    deselect.write_text("verify/suites/test_sample.py::test_crashed_before\n")
    env = dict(os.environ, **{H.EVENTS_ENV: str(events), H.DESELECT_ENV: str(deselect)})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--device", "cpu",
                           "test_sample.py"], cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "2 deselected" in proc.stdout, proc.stdout
    evs = [json.loads(line) for line in events.read_text().splitlines()]
    assert evs[0]["event"] == "env" and evs[0]["device"] == "cpu"
    assert [e for e in evs if e["event"] == "env"] == [evs[0]]
    starts = [e["id"] for e in evs if e["event"] == "start"]
    ends = {e["id"]: e for e in evs if e["event"] == "end"}
    want = {
        "test_sample.py::test_pass": ("pass", ""),
        "test_sample.py::test_wrong_result": ("fail", "AssertionError: wrong sum"),
        "test_sample.py::test_raises": ("error", "RuntimeError: MPS exploded"),
        "test_sample.py::test_skipped": ("skip", "not on this device"),
        "test_sample.py::test_setup_error": ("error", "OSError: setup went wrong"),
        "test_sample.py::test_after_the_crash": ("pass", ""),
    }
    assert sorted(starts) == sorted(want)
    have = {k: (v["outcome"], v["message"]) for k, v in ends.items()}
    assert have == want
    for e in ends.values():
        assert e["duration"] >= 0
    # Each end follows its start.
    order = [(e["event"], e.get("id")) for e in evs[1:]]
    for nodeid in want:
        assert order.index(("start", nodeid)) < order.index(("end", nodeid))


# ---------------------------------------------------------------------------------------------
# The second-pass helpers: capabilities, memory and elapsed-time judgements, exact int work.


class _NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _fake_torch(version="9.9", device_mod=None, accelerator=None, **extra):
    t = _NS(__version__=version, **extra)
    for name, mod in (device_mod or {}).items():
        setattr(t, name, mod)
    if accelerator is not None:
        t.accelerator = accelerator
    return t


def test_device_wide_syncs_lists_what_exists_and_what_does_not():
    calls = []
    acc = _NS(synchronize=lambda: calls.append("acc"),
              current_accelerator=lambda: _NS(type="mps"))
    have, lack = H.device_wide_syncs(
        _fake_torch(device_mod={"mps": _NS(synchronize=lambda: calls.append("mps"))},
                    accelerator=acc), "mps")
    assert [n for n, _ in have] == ["torch.mps.synchronize", "torch.accelerator.synchronize"]
    assert lack == []
    for _, fn in have:
        fn()
    assert calls == ["mps", "acc"]

    # torch 1.13 on CPU: neither exists, and each absence says why.
    have, lack = H.device_wide_syncs(_fake_torch("1.13.0", device_mod={"cpu": _NS()}), "cpu")
    assert have == []
    assert [n for n, _ in lack] == ["torch.cpu.synchronize", "torch.accelerator.synchronize"]
    assert "synchronously" in lack[0][1] and "2.6" in lack[1][1]

    # torch.accelerator on a CUDA machine does not count for a cpu run.
    acc = _NS(synchronize=lambda: None, current_accelerator=lambda: _NS(type="cuda"))
    have, lack = H.device_wide_syncs(
        _fake_torch(device_mod={"cpu": _NS(synchronize=lambda: None)}, accelerator=acc), "cpu")
    assert [n for n, _ in have] == ["torch.cpu.synchronize"]
    assert lack == [("torch.accelerator.synchronize", "the current accelerator is cuda, not cpu")]


def test_device_events_says_why_there_are_none():
    make, why = H.device_events(torch, "cpu")
    assert make is None and "cpu has no device events" in why
    make, why = H.device_events(_fake_torch("1.13.0"), "mps")
    assert make is None and "2.1" in why


@pytest.mark.parametrize("before,after,problem", [
    ({"rss": 100 * H.MIB}, {"rss": 110 * H.MIB}, None),
    ({"rss": 100 * H.MIB}, {"rss": 140 * H.MIB}, "rss memory grew by 40.00 MiB"),
    ({"rss": 100 * H.MIB, "allocated": 5 * H.MIB}, {"rss": 90 * H.MIB, "allocated": 7 * H.MIB},
     "allocated memory grew by 2.00 MiB"),
    ({"cached": 0}, {}, None),  # a counter measured only once is not judged
])
def test_memory_growth(before, after, problem):
    tol = {"rss": 24 * H.MIB, "allocated": H.MIB, "cached": 64 * H.MIB}
    rows, problems = H.memory_growth(before, after, tol, 100)
    assert [k for k, _ in rows] == sorted(k for k in before if k in after)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(problem), problems


@pytest.mark.parametrize("elapsed,wall,ok", [
    (1.5, 3.0, True), (0.0, 0.1, True), (4.0, 3.0, True),  # within the 2 ms slack
    (10.0, 3.0, False), (-0.5, 3.0, False), (float("nan"), 3.0, False), (None, 3.0, False),
])
def test_elapsed_problem(elapsed, wall, ok):
    assert (H.elapsed_problem(elapsed, wall, 2.0) is None) == ok


def test_int_work_is_exact_and_a_single_wrong_element_fails():
    import suite_work as W

    work = W.IntChain("cpu", 24, 5)
    refs = work.reference(3)
    again = [work.run(tid) for tid in range(3)]
    H.check_threads(again, refs, work.tol)
    for r in refs:
        assert bool((r == r.round()).all()) and float(r.min()) >= -3 and float(r.max()) <= 3
    again[1] = again[1].clone()
    again[1][0, 0] += 1
    with pytest.raises(AssertionError, match="1 of 3 threads gave wrong results"):
        H.check_threads(again, refs, work.tol)

    churn = W.AllocChurn("cpu", [8, 12])
    assert len(churn.run(0, 4)) == 4
    H.check_threads([churn.run(t, 4) for t in range(2)], churn.reference(2, 4), churn.tol)


def test_profile_knobs_cap_long_chains_on_cpu_only():
    full_cpu, full_cuda = H.profile_knobs("full", "cpu"), H.profile_knobs("full", "cuda")
    assert full_cuda == H.PROFILES["full"]
    for key in H.CPU_QUICK_KNOBS:
        assert full_cpu[key] == H.PROFILES["quick"][key] != H.PROFILES["full"][key]
    assert full_cpu["threads"] == H.PROFILES["full"]["threads"]
    quick_cpu = H.profile_knobs("quick", "cpu")
    for key, value in H.CPU_SHORT_KNOBS.items():
        assert quick_cpu[key] == full_cpu[key] == value < H.PROFILES["quick"][key]
    assert {k: v for k, v in quick_cpu.items() if k not in H.CPU_SHORT_KNOBS} == \
        {k: v for k, v in H.PROFILES["quick"].items() if k not in H.CPU_SHORT_KNOBS}
    assert H.profile_knobs("quick", "cuda") == H.PROFILES["quick"]


# ---------------------------------------------------------------------------------------------
# The third-pass helpers (issue 18): hand-offs, the synchronize loop, event reuse, and the
# memory and low-precision bounds. The CPU has no device events and, in torch 1.13, no
# torch.cpu.synchronize, so the event and synchronize paths of those tests only run on a GPU:
# here they run with stand-ins, to show that the machinery works and that its checks fail when
# the hazard happens.


def test_prefetch_handoff_checks_every_item():
    import suite_work as W

    for source in W.HANDOFF_SOURCES:
        work = W.PrefetchHandoff("cpu", source, 16, 2, 3)
        work.prepare(2)
        refs = work.reference(2)
        results, busy = work.run(2, 3, timeout=60)
        work.check(results, busy, refs)
        assert sorted(results) == sorted(refs[0]) == [(p, i) for p in range(2) for i in range(3)]
        x, z = results[(1, 2)]
        z = z.clone()
        z[0, 0] += 1
        results[(1, 2)] = (x, z)
        with pytest.raises(AssertionError, match=r"1 of 8 hand-offs through the queue wrong "
                                                 r"\(%s\); first: producer 1 item 2 computed "
                                                 r"on by a consumer" % source):
            work.check(results, busy, refs)
        del results[(0, 1)]
        with pytest.raises(AssertionError, match="producer 0 item 1: never consumed"):
            work.check(results, busy, refs)


def test_returned_tensors_reads_every_way_and_checks():
    import suite_work as W

    work = W.ReturnedTensors("cpu", 12, 2, 3)
    refs = work.reference(2)
    results = {(tid, s): work.read(y, s) for t in range(2) for tid, s, y in work.run(t)}
    work.check(results, refs)
    host, total, last = results[(1, 1)]
    results[(1, 1)] = (host, total + 7, last)
    with pytest.raises(AssertionError, match=r"1 of 6 results read by the main thread wrong; "
                                             r"first: worker 1 step 1 \.sum\(\)\.item\(\)"):
        work.check(results, refs)


def test_timed_forwards_runs_the_syncer_beside_the_workers():
    import suite_work as W

    work = W.ModelWork("cpu", "mlp", "shared", batch=2)
    work.prepare(3)
    refs = work.reference(3, 4)
    calls = []
    outs, wall, count = W.timed_forwards(work, 3, 4, 60, sync=lambda: calls.append(1))
    H.check_threads(outs, refs, work.tol)
    assert count == len(calls) >= 1 and wall > 0
    outs, wall, count = W.timed_forwards(work, 3, 4, 60)
    H.check_threads(outs, refs, work.tol)
    assert count == 0 and wall > 0


_PENDING = threading.local()


class _LateWork:
    """Mixin for suite_work.EventReuse: the producer's output is written only when an event
    recorded after it completes, as on a device whose queue has not run it yet."""

    def compute(self, x, w):
        import suite_work as W

        y = torch.zeros_like(x)
        fills = getattr(_PENDING, "fills", [])
        fills.append(lambda: y.copy_(W.busy_chain(x, w, self.steps)))
        _PENDING.fills = fills
        return y


class _StandInEvent:
    """A CPU stand-in for a device event, for these self-tests only. record() takes the work
    queued on the recording thread since its last record; wait(), synchronize() and query()
    complete it. stale=True is an event whose signal counter was reset while an old signal
    landed: it reports completion at once and never waits for the work."""

    def __init__(self, stale=False):
        self.stale = stale
        self.records = 0
        self.t = None
        self._fills = []

    def record(self):
        self.records += 1
        self.t = time.perf_counter()
        self._fills = getattr(_PENDING, "fills", [])
        _PENDING.fills = []

    def _complete(self):
        if not self.stale:
            fills, self._fills = self._fills, []
            for fill in fills:
                fill()
        return True

    wait = synchronize = query = _complete

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000.0


@pytest.mark.parametrize("mode", ["recycled", "churn"])
def test_event_reuse_with_stand_in_events(mode):
    import contextlib

    import suite_work as W

    made = []

    def make(timing):
        made.append(_StandInEvent())
        return made[-1]

    class Late(_LateWork, W.EventReuse):
        pass

    work = Late("cpu", make, 12, 3, 9, 2, mode)
    refs = work.reference(2)
    results = work.run(2, 60, contextlib.nullcontext)
    elapsed = work.check(results, refs, 2.0)
    assert len(elapsed) == 2 * 3  # rounds 1, 4, 7 of both pairs synchronize
    if mode == "recycled":
        assert len(made) == 2 * 2 * 2  # pool of 2 (start, end) pairs per producer
        assert max(e.records for e in made) >= 4
    else:
        assert len(made) == 2 * 2 * 9

    # Events that say "done" before the work is: every check of the consumer must catch it.
    work = Late("cpu", lambda timing: _StandInEvent(stale=True), 12, 3, 9, 2, mode)
    results = work.run(2, 60, contextlib.nullcontext)
    with pytest.raises(AssertionError, match=r"18 of 18 event hand-offs wrong \(%s\)" % mode):
        work.check(results, refs, 2.0)


def test_memory_bound_breaks_on_heaps_per_stream():
    gib, mib = 1024 * H.MIB, H.MIB
    held = 8 * 2 * 24 * mib  # 8 threads holding two 24 MiB tensors each
    # Shared heaps on a Mac's unified memory: one 1 GiB heap for one thread and for eight.
    assert gib + 8 * mib <= H.memory_bound(held, gib + 8 * mib)
    # A heap per stream: eight of them.
    assert 8 * gib > H.memory_bound(held, gib + 8 * mib)
    # A discrete GPU's 128 MiB heaps: three shared, or one per stream.
    assert 3 * 128 * mib <= H.memory_bound(held, 128 * mib)
    assert 8 * 128 * mib > H.memory_bound(held, 128 * mib)
    # CUDA's caching allocator: segments of the allocations' sizes, whatever the streams.
    assert held <= H.memory_bound(held, 48 * mib)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_low_precision_bound_admits_every_correct_sum_and_catches_a_wrong_one(dtype):
    import torch.nn.functional as F

    k = 32
    gen = torch.Generator().manual_seed(1)

    def rnd(t):
        return t.to(dtype).float()

    x = rnd(torch.randn(64, k, generator=gen))
    w = rnd(torch.randn(24, k, generator=gen) / k ** 0.5)
    b = rnd(torch.randn(24, generator=gen))
    ref = F.linear(x, w, b)
    scale = F.linear(x.abs(), w.abs(), b.abs())
    correct = rnd(ref)
    twice = rnd(rnd(x @ w.t()) + b)  # mm rounded to dtype, then the bias added and rounded
    acc = torch.zeros(64, 24)
    for i in range(k):  # accumulated in dtype, one rounded product at a time
        acc = rnd(acc + rnd(x[:, i:i + 1] * w[:, i]))
    low = rnd(acc + b)
    for have in (correct, twice, low):
        assert H.low_precision_problem(torch, have.to(dtype), ref, scale, dtype, k, "y") is None
    stale = rnd(F.linear(x.roll(1, 0), w, b))  # another input's result
    msg = H.low_precision_problem(torch, stale.to(dtype), ref, scale, dtype, k, "y")
    assert msg is not None and "beyond the %s bound" % str(dtype)[6:] in msg, msg
    nan = correct.clone()
    nan[3, 4] = float("nan")
    assert "1 of 1536 elements" in H.low_precision_problem(torch, nan.to(dtype), ref, scale,
                                                           dtype, k, "y")
    assert "dtype" in H.low_precision_problem(torch, correct, ref, scale, dtype, k, "y")
    off, n, err = H.rounding_stats(torch, correct.to(dtype), ref, scale, dtype)
    assert (off, n) == (0, 1536) and err <= 1.0
    off, n, _ = H.rounding_stats(torch, low.to(dtype), ref, scale, dtype)
    assert 0 < off <= n

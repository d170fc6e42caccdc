"""pytest wiring of the mpspatch suites: options, device choice, runner events, deselection.

Options: --device mps|cuda|cpu (default: the best available), --profile quick|full,
--threads 2,4,8 (overrides the profile's thread matrix).

Environment (set by the Go runner, `mpspatch verify`):
  MPSPATCH_EVENTS    append JSON-lines events here (env, start, end; see docs/verify.md)
  MPSPATCH_DESELECT  file of node IDs, one a line, to deselect (the runner continues after a
                     crash in a fresh process without re-running what crashed)
"""

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import suite_harness as H  # noqa: E402

_EVENTS = H.EventLog(None)
_PHASES = {}
_STARTED = {}
_NOTES = []


def pytest_addoption(parser):
    group = parser.getgroup("mpspatch")
    group.addoption("--device", action="store", default=None, choices=H.DEVICES,
                    help="device under test (default: mps, else cuda, else cpu)")
    group.addoption("--profile", action="store", default="quick", choices=sorted(H.PROFILES),
                    help="quick: small sizes, minutes; full: 8-16 threads, 50-100 iterations")
    group.addoption("--threads", action="store", default=None,
                    help="comma-separated thread counts overriding the profile, e.g. 2,4,8")


class Settings:
    """What every test reads: device, profile knobs, thread matrix."""

    def __init__(self, torch, device, profile, threads_override):
        self.torch = torch
        self.device = device
        self.profile = profile
        self.knobs = H.profile_knobs(profile, device)
        self.override = threads_override
        self.threads = threads_override or self.knobs["threads"]
        self.raw_threads = threads_override or self.knobs["raw_threads"]

    def __getitem__(self, key):
        return self.knobs[key]

    def sync(self):
        H.synchronize(self.torch, self.device)


_SETTINGS = None


def _settings(config):
    global _SETTINGS
    if _SETTINGS is None:
        import torch

        device = config.getoption("--device") or H.best_device(torch)
        if not H.device_available(torch, device):
            raise pytest.UsageError(
                "device %s was asked for but torch %s at %s cannot use it" % (
                    device, torch.__version__, torch.__file__))
        try:
            threads = H.parse_threads(config.getoption("--threads"))
        except ValueError as exc:
            raise pytest.UsageError("--threads: %s" % exc)
        _SETTINGS = Settings(torch, device, config.getoption("--profile"), threads)
    return _SETTINGS


def pytest_configure(config):
    global _EVENTS
    config.addinivalue_line("markers", "subprocess: the test runs fresh python processes")
    settings = _settings(config)
    _EVENTS = H.EventLog.from_env()
    config._mpspatch_env = H.env_event(settings.torch, settings.device)
    _EVENTS.emit(config._mpspatch_env)


def pytest_unconfigure(config):
    _EVENTS.close()


def pytest_report_header(config):
    s = _settings(config)
    env = config._mpspatch_env
    return [
        H.provenance_line(env),
        "mpspatch: device %s (%s), profile %s, threads %s, python %s, GIL %s" % (
            s.device, env["device_name"], s.profile, ",".join(map(str, s.threads)),
            env["python"], "enabled" if env["gil"] else "disabled"),
    ]


def pytest_collection_modifyitems(config, items):
    path = os.environ.get(H.DESELECT_ENV)
    if not path:
        return
    try:
        keys = H.read_deselect(path)
    except OSError as exc:
        raise pytest.UsageError("%s=%s: %s" % (H.DESELECT_ENV, path, exc))
    keep, drop = [], []
    for item in items:
        (drop if H.is_deselected(item.nodeid, keys) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    _PHASES[nodeid] = []
    _STARTED[nodeid] = time.monotonic()
    _EVENTS.emit({"event": "start", "id": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    assertion = False
    if call.excinfo is not None:
        assertion = call.excinfo.errisinstance(AssertionError) or \
            call.excinfo.errisinstance(pytest.fail.Exception)
    message = ""
    if report.failed:
        if call.excinfo is not None:
            message = H.first_line(call.excinfo.exconly())
        else:
            message = H.first_line(report.longreprtext)
    elif report.skipped and call.excinfo is not None:
        message = H.first_line(getattr(call.excinfo.value, "msg", "") or call.excinfo.exconly())
    _PHASES.setdefault(item.nodeid, []).append(
        (report.when, report.outcome, assertion, message, report.duration))


def pytest_runtest_logfinish(nodeid, location):
    phases = _PHASES.pop(nodeid, [])
    started = _STARTED.pop(nodeid, None)
    outcome = H.classify([(w, o, a) for w, o, a, _, _ in phases])
    message = ""
    for _, o, _, m, _ in phases:
        if o != "passed" and m:
            message = m
            break
    duration = sum(d for _, _, _, _, d in phases)
    if not phases and started is not None:
        duration = time.monotonic() - started
    _EVENTS.emit({"event": "end", "id": nodeid, "outcome": outcome,
                  "duration": round(duration, 4), "message": message})


# ---------------------------------------------------------------------------------------------
# Fixtures.


@pytest.fixture(scope="session")
def settings(pytestconfig):
    return _settings(pytestconfig)


@pytest.fixture(scope="session")
def events():
    """The event log, for tests that report extra rows (boundary)."""
    return _EVENTS


@pytest.fixture
def note(request):
    """note(key, value): a measurement or a capability a test could not check, kept three ways:
    the test's user properties (junit), a `note` event for the runner (which may ignore it),
    and a line in the terminal summary ("mpspatch notes")."""

    def _note(key, value):
        request.node.user_properties.append((key, value))
        _EVENTS.emit({"event": "note", "id": request.node.nodeid, "key": key, "value": value})
        _NOTES.append((request.node.nodeid, key, value))

    return _note


def pytest_generate_tests(metafunc):
    """Parametrize `threads` from the profile (or --threads): `threads` uses the model matrix,
    `raw_threads` the raw-op matrix (always reaching 16 unless --threads says otherwise)."""
    s = _settings(metafunc.config)
    if "threads" in metafunc.fixturenames:
        metafunc.parametrize("threads", s.threads, ids=lambda n: "t%d" % n)
    if "raw_threads" in metafunc.fixturenames:
        metafunc.parametrize("raw_threads", s.raw_threads, ids=lambda n: "t%d" % n)


def pytest_terminal_summary(terminalreporter):
    if _NOTES:
        terminalreporter.write_sep("-", "mpspatch notes (measurements, capabilities not checked)")
        for nodeid, key, value in _NOTES:
            terminalreporter.write_line("%s: %s = %s" % (nodeid, key, value))
    mod = sys.modules.get("test_boundary")
    if mod is None or not getattr(mod, "BOUNDARIES", None):
        return
    terminalreporter.write_sep("-", "mpspatch thread boundary (largest passing count, 1..16)")
    for line in mod.pytest_terminal_summary_lines():
        terminalreporter.write_line(line)

"""Crash-isolation fixture for the Go runner's tests (verify/runner_test.go).

Run with the real suites' conftest.py (copied beside it by the test). Every way a test can
end is here, each followed by a passing test, so the Go test can assert that a crash costs
exactly one test and that the runner goes on in a fresh process.
"""

import os
import signal
import subprocess
import sys
import time

import pytest


def test_a_before():
    assert sum(range(4)) == 6


def test_b_segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def test_c_after_segfault():
    assert "after" in "after the segfault"


def test_d_metal_abort():
    # What Metal's API validation writes before it aborts the process. Written to fd 2 as
    # native code does, so that nothing in Python can capture it.
    os.write(2, b"-[MTLDebugCommandBuffer commit]:229: failed assertion "
                b"`commit an already committed command buffer'\n")
    os.abort()


def test_e_after_abort():
    pass


def test_f_hang():
    # A grandchild that would outlive the suite process unless the whole group is killed.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    pidfile = os.environ.get("CRASHY_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(child.pid))
    time.sleep(600)


def test_g_after_hang():
    pass


def test_h_wrong_result():
    assert [1, 2, 3] == [1, 2, 4], "thread 3 disagrees with the reference"


def test_i_runtime_error():
    raise RuntimeError("MPSGraph: Invalid KernelDAG while encoding")


def test_j_skip():
    pytest.skip("does not apply here")


def test_k_last():
    pass

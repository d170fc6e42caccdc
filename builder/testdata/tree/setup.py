# A stand-in for PyTorch's setup.py, small enough for the builder tests: like PyTorch's,
# its build_ext step configures CMakeLists.txt with cmake -G Ninja and builds it with
# ninja, so `python -m pip install -e . -v --no-build-isolation` prints real cmake and
# ninja output. MPSPATCH_FIXTURE_BREAK=1 compiles a deliberate error.
import os
import subprocess

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def run(self):
        build = os.path.join(HERE, "build")
        broken = "ON" if os.environ.get("MPSPATCH_FIXTURE_BREAK") == "1" else "OFF"
        subprocess.check_call(["cmake", "-S", HERE, "-B", build, "-G", "Ninja", "-DBREAK=" + broken])
        subprocess.check_call(["cmake", "--build", build])
        super().run()


setup(
    name="mpspatch-fixture",
    version="0.0.0",
    packages=["torch"],
    cmdclass={"build_ext": CMakeBuild},
)

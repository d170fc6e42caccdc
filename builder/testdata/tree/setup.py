# A stand-in for PyTorch's setup.py, small enough for the builder tests: like PyTorch's,
# its build_ext step configures CMakeLists.txt with cmake -G Ninja and builds it with
# ninja, so `python -m pip install -e . -v --no-build-isolation` prints real cmake and
# ninja output. Like PyTorch's tools/setup_helpers/cmake.py it passes every environment
# variable starting with CMAKE_, USE_ or BUILD_ to cmake as -D (which is how a compiler
# launcher such as CMAKE_CXX_COMPILER_LAUNCHER=ccache reaches CMake), and like
# tools/generate_torch_version.py it writes torch/version.py with the tree's git HEAD.
# MPSPATCH_FIXTURE_BREAK=1 compiles a deliberate error.
import os
import subprocess

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def git_head():
    try:
        out = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=HERE, stderr=subprocess.DEVNULL)
        return out.decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return "Unknown"


class CMakeBuild(build_ext):
    def run(self):
        build = os.path.join(HERE, "build")
        broken = "ON" if os.environ.get("MPSPATCH_FIXTURE_BREAK") == "1" else "OFF"
        defines = ["-D%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                   if k.startswith(("CMAKE_", "USE_", "BUILD_"))]
        subprocess.check_call(["cmake", "--no-warn-unused-cli", "-S", HERE, "-B", build, "-G", "Ninja", "-DBREAK=" + broken] + defines)
        subprocess.check_call(["cmake", "--build", build])
        with open(os.path.join(HERE, "torch", "version.py"), "w") as f:
            f.write("git_version = %r\n" % git_head())
        super().run()


setup(
    name="mpspatch-fixture",
    version="0.0.0",
    packages=["torch"],
    cmdclass={"build_ext": CMakeBuild},
)

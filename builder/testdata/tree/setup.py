# A stand-in for PyTorch's setup.py: mpspatch's preflight only checks that it exists.
# The builder tests run a fake interpreter (see fake_python_test.go) that configures and
# builds CMakeLists.txt with the real cmake and ninja, as PyTorch's setup.py does.
from setuptools import setup

setup(name="mpspatch-fixture", version="0.0.0", packages=["torch"])

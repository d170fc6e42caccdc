"""Stand-in for the torch package; the provenance stamp is written next to this file."""
try:
    from . import version  # written by setup.py, as PyTorch's build writes torch/version.py
except ImportError:
    pass

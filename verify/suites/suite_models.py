"""Models and inputs used by the suites, built deterministically from a seed.

Weights and inputs are made on the CPU with a seeded generator and then moved to the device,
so the same seed gives the same numbers in any process and any thread: a reference computed
in one process can check a result computed in another.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_NAMES = ("mlp", "conv1d", "sequential", "transformer")

# (input shape without batch) per model; small enough for the quick profile on 2 CPU cores.
_FEATURES = 64
_SEQ = 16
_CHANNELS = 8


class MLP(nn.Module):
    """Linear/ReLU stack: the nn.Linear path the seeds saw crash at 3+ threads."""

    def __init__(self, features=_FEATURES, hidden=128, out=32):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Conv1dStack(nn.Module):
    """Conv1d/BatchNorm/ReLU stack with a linear head (the seeds' Conv1D model)."""

    def __init__(self, channels=_CHANNELS, width=32, out=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(channels, width, kernel_size=3, padding=1),
            nn.BatchNorm1d(width),
            nn.ReLU(),
            nn.Conv1d(width, width, kernel_size=3, padding=1),
            nn.ReLU(),
        )
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=-1))


def _sequential():
    # Graph-heavy ops on MPS (LayerNorm, GELU, Softmax): the "Invalid KernelDAG" seed.
    return nn.Sequential(
        nn.Linear(_FEATURES, 128),
        nn.LayerNorm(128),
        nn.GELU(),
        nn.Linear(128, 64),
        nn.Tanh(),
        nn.Linear(64, 32),
        nn.Softmax(dim=-1),
    )


def _transformer():
    return nn.TransformerEncoderLayer(
        d_model=_FEATURES, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)


_BUILDERS = {
    "mlp": MLP,
    "conv1d": Conv1dStack,
    "sequential": _sequential,
    "transformer": _transformer,
}


def build_model(name, seed, device):
    """Model name with weights drawn from seed, in eval mode on device."""
    if name not in _BUILDERS:
        raise ValueError("unknown model %r (have %s)" % (name, ", ".join(MODEL_NAMES)))
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = _BUILDERS[name]()
    finally:
        torch.random.set_rng_state(state)
    if name == "conv1d":
        # Non-trivial running stats so BatchNorm does real work in eval mode.
        gen = torch.Generator().manual_seed(seed + 1)
        bn = model.body[1]
        bn.running_mean.copy_(torch.randn(bn.running_mean.shape, generator=gen) * 0.1)
        bn.running_var.copy_(torch.rand(bn.running_var.shape, generator=gen) + 0.5)
    return model.to(device).eval()


def model_input(name, batch, seed, device):
    """A CPU-generated input for model name, moved to device."""
    gen = torch.Generator().manual_seed(seed)
    if name == "conv1d":
        shape = (batch, _CHANNELS, 32)
    elif name == "transformer":
        shape = (batch, _SEQ, _FEATURES)
    else:
        shape = (batch, _FEATURES)
    return torch.randn(shape, generator=gen).to(device)


def forward(model, x):
    with torch.no_grad():
        return model(x)


# ---------------------------------------------------------------------------------------------
# Four formulations of one linear layer (the seed: F.linear crashed where addmm and x@w.T+b
# ran). On MPS in v2.9.1, Linear.mm takes its no-graph MPSNDArrayMatrixMultiplication path only
# when input, weight and bias are contiguous (macOS 15+); a non-contiguous weight view forces
# the MPSGraph path. Elsewhere the two paths are the same kernels.

LINEAR_VARIANTS = ("nn_linear", "f_linear", "addmm", "matmul_bias")
LINEAR_PATHS = ("default", "graph")


class LinearParams:
    def __init__(self, seed, device, path, in_features=_FEATURES, out_features=48):
        gen = torch.Generator().manual_seed(seed)
        w = torch.randn(out_features, in_features, generator=gen) / in_features ** 0.5
        b = torch.randn(out_features, generator=gen)
        if path == "graph":
            # Same values, non-contiguous layout: stored transposed, viewed back.
            self.weight = w.t().contiguous().to(device).t()
        elif path == "default":
            self.weight = w.to(device)
        else:
            raise ValueError("unknown linear path %r" % path)
        self.bias = b.to(device)
        self.module = nn.Linear(in_features, out_features).eval()
        # nn.Parameter keeps the strides of what it wraps, so on the graph path the module
        # also holds the non-contiguous weight.
        self.module.weight = nn.Parameter(self.weight, requires_grad=False)
        self.module.bias = nn.Parameter(self.bias, requires_grad=False)


def linear_apply(variant, params, x):
    with torch.no_grad():
        if variant == "nn_linear":
            return params.module(x)
        if variant == "f_linear":
            return F.linear(x, params.weight, params.bias)
        if variant == "addmm":
            return torch.addmm(params.bias, x, params.weight.t())
        if variant == "matmul_bias":
            return x @ params.weight.T + params.bias
    raise ValueError("unknown linear variant %r" % variant)

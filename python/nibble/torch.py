"""Train a PyTorch model's linear layers under a Nibble recipe.

``nibble.torch.Linear`` computes Y = X W^T and its two gradients with the three
GEMMs of ``nibble train``'s linear layers, each as its recipe says (``nibble.Recipe``:
the presets bf16, e2m1, ufp4, ufp4-int4, nvfp4, mxfp4 and their ablation flags,
defined once in C++):

- Fprop  Y  = X W^T:   A = X (BF16), B = W (FP32 master);
- Dgrad  dX = dY W:    A = dY (BF16), B = W^T (W quantized column-wise);
- Wgrad  dW = dY^T X:  A = dY^T, B = X^T (both column-wise);

each operand quantized by golden with the recipe's configuration for that GEMM
and operand (RHT signs and SR bits seeded by ``nibble.gemm_seed`` from the run's
quantization seed, the step and the linear's index, as the trainer seeds them),
the product by golden's GEMM, its FP32 result rounded to BF16 (nearest even).
A GEMM the recipe keeps in BF16 (bf16, or a block that ``bf16_first``/``bf16_last``
exempts) is a BF16 matmul. X and dY enter in BF16, as the trainer's activations
and gradients are; Y and dX leave in X's dtype, dW in W's. A bias is added
outside the GEMM.

Where the build made the operator library ``torch.ops.nibble`` (libtorch and, for
the GPU, the CUDA kernels; the library lies beside this package), every quantized
GEMM is ``torch.ops.nibble.quantized_gemm``: golden on CPU tensors, the
nibble::cuda kernels (bit-exact with golden) on CUDA tensors, on the tensors'
own device. Without it golden runs on the CPU through NumPy: tensors on another
device are copied there for the GEMMs and the results copied back.
``nibble.torch.OPS`` is the loaded operator namespace, or None.

``quantize_linears(model, recipe)`` swaps every ``nn.Linear`` of a model for a
``Linear`` sharing its parameters, and returns the ``QuantState`` that holds the
recipe, the seed and the step: call ``state.advance()`` after each optimizer step
so that the next step draws new RHT signs and SR bits, as the trainer does.
"""
import os as _os

import numpy as np
import torch as _torch

from . import Recipe as _Recipe
from . import _nibble

_OPS_LIBRARY = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "libnibble_torch_ops.so")


def _load_ops():
    """torch.ops.nibble, loaded from the operator library beside this package, or None
    where the build has none (no libtorch, or a libtorch the build did not accept)."""
    if not _os.path.exists(_OPS_LIBRARY):
        return None
    _torch.ops.load_library(_OPS_LIBRARY)
    return _torch.ops.nibble


OPS = _load_ops()


def config_text(cfg):
    """A nibble.QuantConfig as quantized_gemm's configuration argument: "key=value,..." of to_dict()."""
    return ",".join(f"{k}={v}" for k, v in cfg.to_dict().items())


class QuantState:
    """What the swapped linears share: the recipe, the run's quantization seed,
    the number of quantized blocks the recipe's bf16_first/bf16_last count from,
    and the training step the seeds are drawn for."""

    def __init__(self, recipe, quant_seed=0, n_layers=1):
        if isinstance(recipe, str):
            recipe = _Recipe(recipe)
        if not isinstance(recipe, _Recipe):
            raise TypeError("recipe must be a preset name or a nibble.Recipe")
        if not isinstance(n_layers, int) or n_layers < 1:
            raise ValueError(f"n_layers must be a positive integer, got {n_layers!r}")
        _nibble.gemm_seed(quant_seed, 0, 0, "fprop")  # the seed's range, checked once here
        self.recipe = recipe
        self.quant_seed = quant_seed
        self.n_layers = n_layers
        self.step = 0

    def advance(self):
        """The next training step: new RHT signs and SR bits for every GEMM."""
        self.step += 1

    def __repr__(self):
        return f"<nibble.torch.QuantState {self.recipe.name} seed {self.quant_seed} step {self.step}>"


def _numpy_operand(src, transposed):
    """src as golden quantizes it: FP32 on the CPU, transposed for a column-wise operand."""
    x = src.detach().to(device="cpu", dtype=_torch.float32)
    if transposed:
        x = x.t()
    return np.ascontiguousarray(x.numpy())


def _gemm(state, gemm, site, layer, a, a_t, b, b_t):
    """C = op(a) op(b)^T in BF16, quantized as the recipe says for this GEMM, else a BF16 matmul."""
    seed = _nibble.gemm_seed(state.quant_seed, state.step, site, gemm)
    ca = state.recipe.operand_config(gemm, "a", layer=layer, n_layers=state.n_layers, seed=seed)
    cb = state.recipe.operand_config(gemm, "b", layer=layer, n_layers=state.n_layers, seed=seed)
    if ca is None or cb is None:
        oa = a.t() if a_t else a
        ob = b.t() if b_t else b
        return _torch.matmul(oa.to(_torch.bfloat16), ob.to(_torch.bfloat16).t())
    if OPS is not None and a.device == b.device:
        try:
            return OPS.quantized_gemm(a.contiguous(), a_t, config_text(ca), b.contiguous(), b_t, config_text(cb), True)
        except NotImplementedError:  # a device the library has no kernels for: golden below
            pass
    qa = _nibble._quantize(_numpy_operand(a, a_t), ca)
    qb = _nibble._quantize(_numpy_operand(b, b_t), cb)
    c = _torch.from_numpy(_nibble.gemm(qa, qb))
    return c.to(_torch.bfloat16).to(a.device)  # round to nearest even, as the trainer's backends do


class _QuantLinearFunction(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, state, site, layer):
        x2 = x.reshape(-1, x.shape[-1]).to(_torch.bfloat16).contiguous()
        ctx.save_for_backward(x2, w)
        ctx.state, ctx.site, ctx.layer, ctx.x_shape, ctx.x_dtype = state, site, layer, x.shape, x.dtype
        ctx.step = state.step  # the backward of this step draws this step's seeds
        y = _gemm(state, "fprop", site, layer, x2, False, w, False)
        return y.to(x.dtype).reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, grad):
        x2, w = ctx.saved_tensors
        state = ctx.state
        step, state.step = state.step, ctx.step
        try:
            dy = grad.reshape(-1, w.shape[0]).to(_torch.bfloat16).contiguous()
            dx = dw = None
            if ctx.needs_input_grad[0]:
                dx = _gemm(state, "dgrad", ctx.site, ctx.layer, dy, False, w, True)
                dx = dx.to(ctx.x_dtype).reshape(ctx.x_shape)
            if ctx.needs_input_grad[1]:
                dw = _gemm(state, "wgrad", ctx.site, ctx.layer, dy, True, x2, True).to(w.dtype)
        finally:
            state.step = step
        return dx, dw, None, None, None


class Linear(_torch.nn.Module):
    """y = x W^T (+ b) with the recipe's Fprop, Dgrad and Wgrad GEMMs.

    site: the linear's index in the model (a GEMM's seed depends on it);
    layer: the block it belongs to, for the recipe's bf16_first/bf16_last
    (0 <= layer < state.n_layers)."""

    def __init__(self, in_features, out_features, bias=True, *, state, site=0, layer=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(state, QuantState):
            raise TypeError("state must be a nibble.torch.QuantState")
        if not 0 <= layer < state.n_layers:
            raise ValueError(f"layer {layer} is outside 0..{state.n_layers - 1}")
        _nibble.gemm_seed(0, 0, site, "fprop")  # the index's range
        self.in_features, self.out_features = in_features, out_features
        self.state, self.site, self.layer = state, site, layer
        kw = {"device": device, "dtype": dtype}
        self.weight = _torch.nn.Parameter(_torch.empty(out_features, in_features, **kw))
        self.bias = _torch.nn.Parameter(_torch.empty(out_features, **kw)) if bias else None
        bound = 1.0 / max(1, in_features) ** 0.5
        _torch.nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            _torch.nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_linear(cls, linear, *, state, site=0, layer=0):
        """A Linear sharing `linear`'s weight and bias (the same Parameter objects)."""
        q = cls.__new__(cls)
        _torch.nn.Module.__init__(q)
        if not 0 <= layer < state.n_layers:
            raise ValueError(f"layer {layer} is outside 0..{state.n_layers - 1}")
        q.in_features, q.out_features = linear.in_features, linear.out_features
        q.state, q.site, q.layer = state, site, layer
        q.weight = linear.weight
        q.bias = linear.bias
        return q

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ValueError(f"input's last dimension is {x.shape[-1]}, the layer takes {self.in_features}")
        y = _QuantLinearFunction.apply(x, self.weight, self.state, self.site, self.layer)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"recipe={self.state.recipe.name}, site={self.site}, layer={self.layer}")


def quantize_linears(model, recipe, *, quant_seed=0, skip=(), layer_of=None, n_layers=None):
    """Swaps every nn.Linear of `model` (in place, in module order) for a nibble.torch.Linear
    sharing its parameters; returns the QuantState they share.

    skip: names (as model.named_modules() gives them) of linears to leave as they
    are (an LM head, say). Each swapped linear's site is its index in that order;
    its layer is layer_of(name) where given (with n_layers the number of blocks),
    else its index (n_layers then the number of swapped linears)."""
    skip = set(skip)
    names = [n for n, m in model.named_modules() if type(m) is _torch.nn.Linear and n not in skip]
    unknown = skip - {n for n, _ in model.named_modules()}
    if unknown:
        raise ValueError(f"skip names no module of the model: {sorted(unknown)}")
    if not names:
        raise ValueError("the model has no nn.Linear to swap")
    if layer_of is None:
        layers = list(range(len(names)))
        n_layers = len(names)
    else:
        if n_layers is None:
            raise ValueError("layer_of needs n_layers")
        layers = [layer_of(n) for n in names]
    state = QuantState(recipe, quant_seed, n_layers)
    for site, (name, layer) in enumerate(zip(names, layers)):
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, Linear.from_linear(getattr(parent, attr), state=state, site=site, layer=layer))
    return state

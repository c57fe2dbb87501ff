"""torch.ops.nibble.quantized_gemm, the operator library beside the package: on CPU
tensors golden, on CUDA tensors the nibble::cuda kernels; both bit for bit what
golden's quantize and GEMM give through NumPy. Skipped where PyTorch or the
operator library is missing; the CUDA cases where no GPU is."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import nibble  # noqa: E402
import nibble.torch as nt  # noqa: E402

if nt.OPS is None:
    pytest.skip("this build has no torch.ops.nibble library (libtorch not found)", allow_module_level=True)

CUDA = torch.cuda.is_available()


def golden(a, a_t, ca, b, b_t, cb):
    """C = op(a) op(b)^T by golden through NumPy (FP32)."""
    def operand(x, t):
        x = x.float().cpu().numpy()
        return np.ascontiguousarray(x.T if t else x)
    return nibble.gemm(nibble.quantize(operand(a, a_t), ca), nibble.quantize(operand(b, b_t), cb))


def configs():
    """Every format x scale mode x block shape golden accepts, with SR and RHT16 on some."""
    out = []
    for i, (f, s, blk) in enumerate(itertools.product(nibble.formats, nibble.scale_modes, nibble.block_shapes)):
        kw = {"format": f, "scale": s, "block": blk, "seed": 1000 + i}
        if i % 3 == 1:
            kw["rht"] = 16
        if i % 2 == 1:
            kw["rounding"] = nibble.roundings[-1]
        try:
            out.append(nibble.QuantConfig(**kw))
        except ValueError:  # a combination golden refuses
            pass
    return out


def operands(rng, m, n, k, a_t, b_t, dtype):
    a = rng.standard_normal((k, m) if a_t else (m, k)).astype(np.float32)
    b = (rng.standard_normal((k, n) if b_t else (n, k)) * 0.1).astype(np.float32)
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no GPU"))])
def test_every_configuration_is_goldens(device, rng, cases):
    cfgs = configs()
    cases.check(len(cfgs) >= 3 * len(nibble.formats), f"{len(cfgs)} configurations")
    compared = 0
    for i, ca in enumerate(cfgs):
        cb = cfgs[(i * 7 + 3) % len(cfgs)]
        if ca.block != cb.block and "16x16" in (ca.block, cb.block):
            cb = ca
        a_t, b_t = bool(i & 1), bool(i & 2)
        dtype = torch.bfloat16 if i % 4 == 3 else torch.float32
        m, n, k = 16 + 16 * (i % 3), 32, 64 * (1 + i % 2)
        a, b = operands(rng, m, n, k, a_t, b_t, dtype)
        try:
            want = golden(a, a_t, ca, b, b_t, cb)
        except ValueError:  # golden refuses this pair (e.g. mixed scale formats): so must the operator
            with pytest.raises(ValueError):
                nt.OPS.quantized_gemm(a.to(device), a_t, nt.config_text(ca), b.to(device), b_t, nt.config_text(cb))
            cases.check(True, "refused like golden")
            continue
        got = nt.OPS.quantized_gemm(a.to(device), a_t, nt.config_text(ca), b.to(device), b_t, nt.config_text(cb))
        cases.check(got.device.type == device and got.dtype == torch.float32, f"{got.device} {got.dtype}")
        cases.equal(got.cpu().numpy(), want, f"{device} {ca} x {cb} a_t={a_t} b_t={b_t}")
        compared += 1
        bf16 = nt.OPS.quantized_gemm(a.to(device), a_t, nt.config_text(ca), b.to(device), b_t, nt.config_text(cb),
                                     True)
        cases.equal(bf16.float().cpu().numpy(), torch.from_numpy(want).to(torch.bfloat16).float().numpy(),
                    f"{device} bf16 output")
    cases.check(compared >= len(cfgs) // 2, f"only {compared} of {len(cfgs)} pairs compared")


@pytest.mark.skipif(not CUDA, reason="no GPU")
@pytest.mark.parametrize("name", ("e2m1", "ufp4", "ufp4-int4", "nvfp4", "mxfp4"))
def test_a_layer_trains_the_same_bits_on_the_gpu(name, rng, cases):
    def layer(device):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(64, 96, bias=False), torch.nn.Linear(96, 32, bias=False))
        state = nt.quantize_linears(model, name, quant_seed=4)
        model = model.to(device)
        x = torch.from_numpy(rng_x).to(device).requires_grad_(True)
        y = model(x)
        y.backward(torch.ones_like(y) * 1e-3)
        return [t.detach().cpu().numpy() for t in (y, x.grad, model[0].weight.grad, model[1].weight.grad)], state
    rng_x = rng.standard_normal((64, 64)).astype(np.float32)
    (cpu, _), (gpu, _) = layer("cpu"), layer("cuda")
    for u, v, what in zip(cpu, gpu, ("y", "dx", "dw0", "dw1")):
        cases.equal(v, u, f"{name} {what}: CUDA kernels vs golden")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no GPU"))])
def test_quantize_dequantize_is_goldens(device, rng, cases):
    for i, cfg in enumerate(configs()):
        x = torch.from_numpy((rng.standard_normal((32 + 16 * (i % 3), 64)) * 3).astype(np.float32))
        if i % 4 == 3:
            x = x.to(torch.bfloat16)
        want = nibble.dequantize(nibble.quantize(np.ascontiguousarray(x.float().numpy()), cfg))
        got = nt.OPS.quantize_dequantize(x.to(device), nt.config_text(cfg))
        cases.check(got.device.type == device and got.dtype == torch.float32, f"{got.device} {got.dtype}")
        cases.equal(got.cpu().numpy(), want, f"{device} {cfg}")


def test_bad_input(cases):
    a = torch.zeros(16, 32)
    ok = nt.config_text(nibble.QuantConfig())
    bad = [
        ((a, False, "format=fp8", a, False, ok), ValueError),
        ((a, False, "colour=red", a, False, ok), ValueError),
        ((a, False, "rht=17", a, False, ok), ValueError),
        ((a, False, "seed=-1", a, False, ok), ValueError),
        ((a, False, "format", a, False, ok), ValueError),
        ((a, False, ok, torch.zeros(16, 48), False, ok), ValueError),
        ((a.double(), False, ok, a, False, ok), ValueError),
        ((torch.zeros(2, 16, 32), False, ok, a, False, ok), ValueError),
    ]
    for args, err in bad:
        with pytest.raises(err):
            nt.OPS.quantized_gemm(*args)
        cases.check(True, "raised")

"""The training recipes of `nibble train` as the package exposes them: the GEMM
operand table of recipe.h, each preset's documented settings, the seeds, and a
linear layer's three GEMMs quantized as a recipe says."""
import itertools

import numpy as np
import pytest

import nibble

# recipe.h: fprop Y = X W^T, dgrad dX = dY W, wgrad dW = dY^T X, each C = A B^T.
ROLES = {("fprop", "a"): ("x", False), ("fprop", "b"): ("w", False), ("dgrad", "a"): ("dy", False),
         ("dgrad", "b"): ("w", True), ("wgrad", "a"): ("dy", True), ("wgrad", "b"): ("x", True)}


def test_names_and_operand_table(cases):
    cases.check(nibble.recipes == ("bf16", "e2m1", "ufp4", "ufp4-int4", "nvfp4", "mxfp4"), f"{nibble.recipes}")
    cases.check(nibble.recipe_gemms == ("fprop", "dgrad", "wgrad"), f"{nibble.recipe_gemms}")
    for (g, op), role in ROLES.items():
        cases.check(nibble.operand_role(g, op) == role, f"{g} {op}: {nibble.operand_role(g, op)}")


def settings(c):
    return (c.format, c.scale, c.block, c.rounding, c.rht)


def test_presets_as_documented(cases):
    expected = {  # (format, scale, act block, weight block, RHT GEMMs), SR on dY only, from recipe.cpp's descriptions
        "e2m1": ("e2m1", "fp32", "1x16", "1x16", ("wgrad",)),
        "ufp4": ("e1m2", "fp32", "1x16", "1x16", ("fprop", "dgrad", "wgrad")),
        "ufp4-int4": ("int4", "fp32", "1x16", "1x16", ("fprop", "dgrad", "wgrad")),
        "nvfp4": ("e2m1", "nvfp4", "1x16", "16x16", ("wgrad",)),
        "mxfp4": ("e2m1", "mx-floor", "1x32", "1x32", ()),
    }
    for name, (fmt, scale, act, weight, rht) in expected.items():
        r = nibble.Recipe(name)
        cases.check(r.quantized and r.rht == rht, f"{name}: {r}")
        for (g, op), (role, _) in ROLES.items():
            c = r.operand_config(g, op, layer=0, n_layers=4, seed=11)
            want = (fmt, scale, weight if role == "w" else act, "sr" if role == "dy" else "rne", 16 if g in rht else 0)
            cases.check(settings(c) == want, f"{name} {g} {op}: {c}")
            cases.check(c.seed == 11 and c.stream == (0 if op == "a" else 1), f"{name} {g} {op} seed/stream: {c}")
    bf16 = nibble.Recipe("bf16")
    cases.check(not bf16.quantized and all(bf16.operand_config(g, op) is None for g, op in ROLES), "bf16")
    nv = nibble.Recipe("nvfp4")
    cases.check(nv.layer_quantized(2, 4) and not nv.layer_quantized(3, 4), "nvfp4 keeps the last block in BF16")
    cases.check(nv.operand_config("fprop", "a", layer=3, n_layers=4) is None, "BF16 block: no quantization")


def test_flags(cases):
    r = nibble.Recipe("ufp4", rht="wgrad", sr="all", sr_bits=3, weight_block="16x16", bf16_first=1)
    cases.check(r.name == "ufp4+weight-block=16x16+rht=wgrad+sr=all+sr-bits=3+bf16-first=1", r.name)
    cases.check(r.rht == ("wgrad",) and r.sr_bits == 3 and r.bf16_first == 1, f"{r}")
    c = r.operand_config("fprop", "b", layer=1, n_layers=2)
    cases.check(settings(c) == ("e1m2", "fp32", "16x16", "sr", 0) and c.sr_bits == 3, f"{c}")


def test_seeds(cases):
    seen = {nibble.gemm_seed(3, s, i, g) for s in range(20) for i in range(8) for g in nibble.recipe_gemms}
    cases.check(len(seen) == 20 * 8 * 3, f"{len(seen)} distinct GEMM seeds")
    cases.check(nibble.gemm_seed(3, 17, 5, "dgrad") == nibble.gemm_seed(3, 17, 5, "dgrad"), "deterministic")
    cases.check(nibble.gemm_seed(3, 17, 5, "dgrad") != nibble.gemm_seed(4, 17, 5, "dgrad"), "keyed by the run seed")


def layer_gemms(recipe, x, w, dy, seed):
    """The three GEMMs of Y = X W^T under a recipe, through golden, operands as recipe.h lays them out."""
    tensors = {"x": x, "w": w, "dy": dy}
    out = {}
    for g in nibble.recipe_gemms:
        s = nibble.gemm_seed(seed, 0, 0, g)
        q = []
        for op in ("a", "b"):
            role, transposed = nibble.operand_role(g, op)
            t = tensors[role].T if transposed else tensors[role]
            q.append(nibble.quantize(t, recipe.operand_config(g, op, seed=s)))
        out[g] = nibble.gemm(*q)
    return out


def test_ufp4_and_ufp4_int4_give_the_same_gemms(rng, cases):
    x = rng.standard_normal((32, 64)).astype(np.float32)
    w = (rng.standard_normal((48, 64)) / 8).astype(np.float32)
    dy = rng.standard_normal((32, 48)).astype(np.float32)
    e1m2 = layer_gemms(nibble.Recipe("ufp4"), x, w, dy, 7)
    int4 = layer_gemms(nibble.Recipe("ufp4-int4"), x, w, dy, 7)
    shapes = {"fprop": (32, 48), "dgrad": (32, 64), "wgrad": (48, 64)}
    for g in nibble.recipe_gemms:
        cases.check(e1m2[g].shape == shapes[g], f"{g}: shape {e1m2[g].shape}")
        cases.equal(int4[g], e1m2[g], f"{g}: INT4 and E1M2 under the same scale rule and seeds")
    e2m1 = layer_gemms(nibble.Recipe("e2m1"), x, w, dy, 7)
    cases.check(not np.array_equal(e2m1["fprop"], e1m2["fprop"]), "E2M1 differs from E1M2")


BAD = [
    (lambda: nibble.Recipe("fp8"), ValueError, "unknown recipe 'fp8'; valid: bf16, e2m1"),
    (lambda: nibble.Recipe("bf16", format="e1m2"), ValueError, "quantization flags do not apply"),
    (lambda: nibble.Recipe("ufp4", format="e3m0"), ValueError, "e3m0"),
    (lambda: nibble.Recipe("ufp4", rht="backward"), ValueError, "backward"),
    (lambda: nibble.Recipe("ufp4", sr="some"), ValueError, "some"),
    (lambda: nibble.Recipe("ufp4", sr_bits=0), ValueError, ""),
    (lambda: nibble.Recipe("ufp4").operand_config("forward", "a"), ValueError, "unknown GEMM 'forward'"),
    (lambda: nibble.Recipe("ufp4").operand_config("fprop", "c"), ValueError, "unknown operand 'c'"),
    (lambda: nibble.Recipe("ufp4").operand_config("fprop", "a", layer=4, n_layers=4), ValueError, "layer must be in 0..3"),
    (lambda: nibble.Recipe("ufp4").operand_config("fprop", "a", n_layers=0), ValueError, "n_layers must be in 1.."),
    (lambda: nibble.gemm_seed(-1, 0, 0, "fprop"), ValueError, "run_seed must be in 0.."),
    (lambda: nibble.gemm_seed(0, 2**44, 0, "fprop"), ValueError, "step must be in 0.."),
    (lambda: nibble.gemm_seed(0, 0, 2**18, "fprop"), ValueError, "linear_index must be in 0.."),
    (lambda: nibble.operand_role("wgrad", "A"), ValueError, "unknown operand 'A'"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=[f"case{i}" for i in range(len(BAD))])
def test_bad_recipes(call, error, message, cases):
    with pytest.raises(error) as e:
        call()
    cases.check(message in str(e.value), f"{e.value}")

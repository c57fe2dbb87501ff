"""nibble.torch: a linear layer's Fprop, Dgrad and Wgrad under a recipe, against
golden's quantize and GEMM called directly with the recipe's operand
configurations (nibble.Recipe.operand_config and nibble.gemm_seed, the trainer's
own table and seeds). Skipped where PyTorch is not installed."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import nibble  # noqa: E402
import nibble.torch as nt  # noqa: E402

RECIPES = ("e2m1", "ufp4", "ufp4-int4", "nvfp4", "mxfp4")


def bf16_of(a):
    """An FP32 NumPy array rounded to BF16 (nearest even) by torch, as FP32 again."""
    return torch.from_numpy(np.ascontiguousarray(a, np.float32)).to(torch.bfloat16).float().numpy()


def golden_gemm(recipe, gemm, a, b, *, step, site, layer=0, n_layers=1, quant_seed=0):
    """C = a b^T (a, b FP32 NumPy, already laid out as the GEMM's operands), quantized as the
    recipe says, rounded to BF16; None where the recipe runs that GEMM in BF16."""
    seed = nibble.gemm_seed(quant_seed, step, site, gemm)
    ca = recipe.operand_config(gemm, "a", layer=layer, n_layers=n_layers, seed=seed)
    cb = recipe.operand_config(gemm, "b", layer=layer, n_layers=n_layers, seed=seed)
    if ca is None:
        return None
    c = nibble.gemm(nibble.quantize(np.ascontiguousarray(a), ca), nibble.quantize(np.ascontiguousarray(b), cb))
    return bf16_of(c)


# A linear of block 1 of 4: quantized by every preset (nvfp4 keeps block 3 in BF16).
LAYER, N_LAYERS = 1, 4


def run_layer(recipe, x, w, dy, *, step=0, site=0, quant_seed=0):
    state = nt.QuantState(recipe, quant_seed, N_LAYERS)
    state.step = step
    lin = nt.Linear(w.shape[1], w.shape[0], bias=False, state=state, site=site, layer=LAYER)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
    xt = torch.from_numpy(x).requires_grad_(True)
    y = lin(xt)
    y.backward(torch.from_numpy(dy))
    return y.detach().numpy(), xt.grad.numpy(), lin.weight.grad.numpy()


def operands(rng, t, k, n):
    x = rng.standard_normal((t, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    dy = (rng.standard_normal((t, n)) * 1e-3).astype(np.float32)
    return x, w, dy


@pytest.mark.parametrize("name", RECIPES)
def test_three_gemms_are_goldens(name, rng, cases):
    recipe = nibble.Recipe(name)
    for step, site, (t, k, n) in ((0, 0, (32, 64, 48)), (3, 5, (48, 96, 32)), (7, 2, (16, 32, 16))):
        x, w, dy = operands(rng, t, k, n)
        y, dx, dw = run_layer(name, x, w, dy, step=step, site=site, quant_seed=9)
        xb, dyb = bf16_of(x), bf16_of(dy)  # X and dY enter the GEMMs in BF16
        kw = {"step": step, "site": site, "quant_seed": 9, "layer": LAYER, "n_layers": N_LAYERS}
        cases.equal(y, golden_gemm(recipe, "fprop", xb, w, **kw), f"{name} fprop step {step}")
        cases.equal(dx, golden_gemm(recipe, "dgrad", dyb, w.T, **kw), f"{name} dgrad step {step}")
        cases.equal(dw, golden_gemm(recipe, "wgrad", dyb.T, xb.T, **kw), f"{name} wgrad step {step}")


def test_bf16_recipe_is_a_bf16_matmul(rng, cases):
    x, w, dy = operands(rng, 16, 32, 24)
    y, dx, dw = run_layer("bf16", x, w, dy)
    xb, wb, dyb = (torch.from_numpy(a).to(torch.bfloat16) for a in (x, w, dy))
    cases.equal(y, (xb @ wb.t()).float().numpy(), "bf16 fprop")
    cases.equal(dx, (dyb @ wb).float().numpy(), "bf16 dgrad")
    cases.equal(dw, (dyb.t() @ xb).float().numpy(), "bf16 wgrad")


def test_e1m2_and_int4_train_the_same_bits(rng, cases):
    # E1M2 and INT4 dequantize to identical values (positive zero), so the two recipes' GEMMs agree.
    for step in range(3):
        x, w, dy = operands(rng, 32, 64, 32)
        a = run_layer("ufp4", x, w, dy, step=step)
        b = run_layer("ufp4-int4", x, w, dy, step=step)
        for u, v, what in zip(a, b, ("y", "dx", "dw")):
            cases.equal(u, v, f"ufp4 vs ufp4-int4 {what} step {step}")


def test_steps_and_sites_draw_their_own_seeds(rng, cases):
    x, w, dy = operands(rng, 32, 64, 32)
    same = run_layer("ufp4", x, w, dy, step=4, site=1)
    again = run_layer("ufp4", x, w, dy, step=4, site=1)
    for u, v in zip(same, again):
        cases.equal(u, v, "one step, one site: the same bits")
    other_step = run_layer("ufp4", x, w, dy, step=5, site=1)
    other_site = run_layer("ufp4", x, w, dy, step=4, site=2)
    cases.check(not np.array_equal(same[0], other_step[0]), "the RHT signs change with the step")
    cases.check(not np.array_equal(same[1], other_site[1]), "the SR bits change with the site")


def test_backward_uses_the_forward_step(rng, cases):
    x, w, dy = operands(rng, 16, 32, 16)
    state = nt.QuantState("ufp4", 3, N_LAYERS)
    lin = nt.Linear(32, 16, bias=False, state=state, layer=LAYER)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
    xt = torch.from_numpy(x).requires_grad_(True)
    y = lin(xt)
    state.advance()  # an optimizer step between forward and backward must not reseed this step's backward
    y.backward(torch.from_numpy(dy))
    ref = run_layer("ufp4", x, w, dy, step=0, quant_seed=3)
    cases.equal(xt.grad.numpy(), ref[1], "dgrad with the forward's step")
    cases.check(state.step == 1, "the state's step is left as it was")


def test_bf16_blocks_of_a_recipe(rng, cases):
    # nvfp4 keeps its last block in BF16: with 3 linears, the third runs BF16 GEMMs.
    model = torch.nn.Sequential(torch.nn.Linear(32, 32, bias=False), torch.nn.Linear(32, 32, bias=False),
                                torch.nn.Linear(32, 16, bias=False))
    state = nt.quantize_linears(model, "nvfp4")
    cases.check(state.n_layers == 3 and [m.layer for m in model] == [0, 1, 2], f"{state} {list(model)}")
    x = torch.from_numpy(rng.standard_normal((8, 32)).astype(np.float32))
    w = model[2].weight.detach()
    got = model[2](x).detach()
    want = (x.to(torch.bfloat16) @ w.to(torch.bfloat16).t()).float()
    cases.equal(got.numpy(), want.numpy(), "the last block in BF16")
    got0 = model[0](x).detach().numpy()
    ref = golden_gemm(nibble.Recipe("nvfp4"), "fprop", bf16_of(x.numpy()), model[0].weight.detach().numpy(),
                      step=0, site=0, layer=0, n_layers=3)
    cases.equal(got0, ref, "the first block quantized")


def test_quantize_linears_swaps_and_trains(rng, cases):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32),
                                torch.nn.Linear(32, 8))
    params = [id(p) for p in model.parameters()]
    state = nt.quantize_linears(model, "ufp4", quant_seed=5, skip=("3",))
    cases.check(isinstance(model[0], nt.Linear) and isinstance(model[2], nt.Linear), f"{model}")
    cases.check(type(model[3]) is torch.nn.Linear, "a skipped linear stays")
    cases.check([id(p) for p in model.parameters()] == params, "the same parameters")
    cases.check((model[0].site, model[2].site) == (0, 1), "sites in module order")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.from_numpy(rng.standard_normal((64, 32)).astype(np.float32))
    target = torch.from_numpy(rng.standard_normal((64, 8)).astype(np.float32))
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        state.advance()
        losses.append(loss.item())
    cases.check(all(np.isfinite(losses)) and losses[-1] < losses[0], f"losses {losses}")
    cases.check(state.step == 8, f"{state}")
    for p in model.parameters():
        cases.check(p.grad is not None and torch.isfinite(p.grad).all().item(), "finite gradients")


def test_bad_input(cases):
    bad = [
        (lambda: nt.QuantState("fp8"), ValueError),
        (lambda: nt.QuantState(3), TypeError),
        (lambda: nt.QuantState("ufp4", -1), (ValueError, TypeError, OverflowError)),
        (lambda: nt.QuantState("ufp4", 0, 0), ValueError),
        (lambda: nt.Linear(8, 8, state="ufp4"), TypeError),
        (lambda: nt.Linear(8, 8, state=nt.QuantState("ufp4"), layer=1), ValueError),
        (lambda: nt.quantize_linears(torch.nn.Sequential(torch.nn.ReLU()), "ufp4"), ValueError),
        (lambda: nt.quantize_linears(torch.nn.Sequential(torch.nn.Linear(4, 4)), "ufp4", skip=("x",)), ValueError),
        (lambda: nt.Linear(8, 8, state=nt.QuantState("ufp4")).forward(torch.zeros(2, 7)), ValueError),
    ]
    for f, err in bad:
        with pytest.raises(err):
            f()
        cases.check(True, "raised")

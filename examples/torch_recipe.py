"""A few training steps of your own PyTorch model under Nibble recipes.

Every nn.Linear of the model is swapped for nibble.torch.Linear, whose Fprop,
Dgrad and Wgrad GEMMs are quantized as the recipe says (golden's quantizer and
GEMM, the same table and seeds as `nibble train`), and the model is trained
from the same initial weights under each recipe. The model here is a small MLP
regressing a random teacher network; put yours in its place.

    python3 examples/torch_recipe.py [--steps N] [--recipes bf16,e2m1,ufp4]
"""
import argparse
import copy

import torch

import nibble.torch as nt


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 128), torch.nn.GELU(),
                               torch.nn.Linear(128, 16))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--recipes", default="bf16,e2m1,ufp4")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.steps < 1:
        p.error("--steps must be at least 1")

    torch.manual_seed(args.seed)
    teacher, start = make_model(), make_model()
    x = torch.randn(256, 64)
    with torch.no_grad():
        y = teacher(x)

    print(f"{'recipe':<10} {'loss at step 1':>15} {'loss at step ' + str(args.steps):>16}")
    for name in args.recipes.split(","):
        model = copy.deepcopy(start)
        state = nt.quantize_linears(model, name, quant_seed=args.seed)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        losses = []
        for _ in range(args.steps):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            state.advance()
            losses.append(loss.item())
        print(f"{name:<10} {losses[0]:>15.5f} {losses[-1]:>16.5f}")


if __name__ == "__main__":
    main()

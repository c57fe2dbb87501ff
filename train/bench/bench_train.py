"""Training speed of `nibble train` beside the plain PyTorch reference, side by side.

For every shape it runs train/reference/train_gpt.py (the yardstick: BF16
autocast, torch.compile, fused AdamW, fused attention) and `nibble train` for
each recipe, on the same GPU and data, one after another, and prints tokens/s
and each recipe's ratio to the reference. Both time the steps after the first
--timed-from (compilation, allocator and cuBLAS warm-up), synchronized at
both ends; nibble's evaluation and diagnostics are off or excluded.

With --repeat N the whole comparison of a shape runs N times in turn (the
reference, then every recipe, then again), and the table reports each
figure's median over the rounds and its range; a recipe's ratio is the
median of its ratios to the reference of the same round, so that a GPU
running faster or slower for a while moves both sides of a ratio.

    python3 train/bench/bench_train.py --nibble build/bin/nibble --data data/brown --out bench.json
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

SHAPES = {  # name: layers, d_model, heads, ctx, batch
    "6.5M": (8, 256, 4, 128, 16),
    "25.6M": (8, 512, 8, 256, 64),
    "85.8M": (12, 768, 12, 512, 32),
}
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:])
        raise SystemExit(f"bench_train: failed ({p.returncode}): {' '.join(cmd)}")
    return p.stdout


def summarize(rounds, shapes, recipes):
    """One row per shape and trainer: the medians over the rounds and their ranges."""
    rows = []
    for shape in shapes:
        for impl, recipe in [("pytorch", None)] + [("nibble", r) for r in recipes]:
            group = [r for r in rounds if r["shape"] == shape and r["impl"] == impl
                     and (recipe is None or r["recipe"] == recipe)]
            row = {k: v for k, v in group[0].items() if k != "round"}
            for key in ("tokens_per_s", "ms_per_step", "ratio"):
                values = [r[key] for r in group]
                row[key] = statistics.median(values)
                row[key + "_range"] = [min(values), max(values)]
            row["rounds"] = len(group)
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nibble", required=True, help="the nibble binary (built with libtorch and CUDA)")
    ap.add_argument("--data", required=True, help="prepared data directory")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ", ".join(SHAPES))
    ap.add_argument("--recipes", default="bf16,e2m1,ufp4,nvfp4")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--timed-from", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1, help="rounds of each shape's comparison (medians reported)")
    ap.add_argument("--reference", default=os.path.join(HERE, "..", "reference", "train_gpt.py"),
                    help="the yardstick: a script with train_gpt.py's options that prints its JSON last")
    ap.add_argument("--out", help="write every measurement here (JSON)")
    a = ap.parse_args()
    if a.timed_from != 10:
        raise SystemExit("bench_train: nibble train times from step 10; keep --timed-from 10")
    if a.repeat < 1:
        raise SystemExit(f"bench_train: --repeat must be at least 1, got {a.repeat}")
    shapes, recipes = a.shapes.split(","), a.recipes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            raise SystemExit(f"bench_train: unknown shape '{shape}'; valid: {', '.join(SHAPES)}")

    version = run([a.nibble, "--version"]).strip().splitlines()[0]
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            L, d, H, T, B = SHAPES[shape]
            size = ["--layers", str(L), "--d-model", str(d), "--heads", str(H), "--ctx", str(T), "--batch", str(B)]
            for rnd in range(a.repeat):
                tag = f" (round {rnd + 1} of {a.repeat})" if a.repeat > 1 else ""
                ref = json.loads(run([sys.executable, a.reference, "--data", a.data, "--steps", str(a.steps),
                                      "--timed-from", str(a.timed_from), *size]).strip().splitlines()[-1])
                rounds.append({"shape": shape, "impl": "pytorch", "recipe": "bf16 (autocast, compiled)",
                               "round": rnd, "tokens_per_s": ref["tokens_per_s"], "ms_per_step": ref["ms_per_step"],
                               "parameters": ref["parameters"], "ratio": 1.0, "gpu": ref["gpu"],
                               "torch": ref["torch"]})
                print(f"{shape}: plain PyTorch {ref['tokens_per_s']:,.0f} tokens/s "
                      f"({ref['ms_per_step']:.1f} ms/step){tag}", flush=True)
                for recipe in recipes:
                    out = os.path.join(tmp, f"{shape}-{recipe}-{rnd}")
                    run([a.nibble, "train", "--recipe", recipe, "--data", a.data, "--steps", str(a.steps),
                         "--diag-every", "0", "--eval-every", "0", "--eval-bytes", "65536", "--device", "cuda",
                         "--out", out, *size])
                    with open(os.path.join(out, "run.json")) as f:
                        r = json.load(f)
                    tps = r["tokens_per_s"]
                    rounds.append({"shape": shape, "impl": "nibble", "recipe": recipe, "round": rnd,
                                   "tokens_per_s": tps, "ms_per_step": B * T / tps * 1000,
                                   "parameters": r["parameters"], "ratio": tps / ref["tokens_per_s"],
                                   "cuda_graph": r.get("cuda_graph", False)})
                    print(f"{shape}: nibble {recipe:6s} {tps:,.0f} tokens/s ({B * T / tps * 1000:.1f} ms/step), "
                          f"{tps / ref['tokens_per_s']:.2f}x plain PyTorch{tag}", flush=True)

    rows = summarize(rounds, shapes, recipes)
    what = f"median of {a.repeat} rounds (range)" if a.repeat > 1 else "one round"
    print(f"\n{what}:\n| shape | parameters | plain PyTorch | " + " | ".join(f"nibble {r}" for r in recipes) + " |")
    print("|---|---|---|" + "---|" * len(recipes))

    def cell(r, ratio):
        text = f"{r['tokens_per_s'] / 1e3:,.0f} k tok/s"
        if a.repeat > 1:
            lo, hi = r["tokens_per_s_range"]
            text += f" ({lo / 1e3:,.0f}–{hi / 1e3:,.0f} k)"
        if ratio:
            text += f" ({r['ratio']:.2f}x"
            text += f", {r['ratio_range'][0]:.2f}–{r['ratio_range'][1]:.2f}x)" if a.repeat > 1 else ")"
        return text

    for shape in shapes:
        ref = next(r for r in rows if r["shape"] == shape and r["impl"] == "pytorch")
        cells = [cell(r, True) for r in rows if r["shape"] == shape and r["impl"] == "nibble"]
        print(f"| {shape} | {ref['parameters']:,} | {cell(ref, False)} | " + " | ".join(cells) + " |")
    if a.out:
        # Through a temporary name, so that a reader never sees half of it.
        with open(a.out + ".tmp", "w") as f:
            json.dump({"schema": "nibble-train-bench/2",
                       "command": shlex.join(["python3", "train/bench/bench_train.py", *sys.argv[1:]]),
                       "nibble": version, "steps": a.steps, "timed_from": a.timed_from, "repeat": a.repeat,
                       "shapes": {k: dict(zip(("layers", "d_model", "heads", "ctx", "batch"), SHAPES[k]))
                                  for k in shapes}, "rows": rows, "rounds": rounds}, f, indent=2)
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()

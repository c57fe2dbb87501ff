"""Training speed of `nibble train` beside the plain PyTorch reference, side by side.

For every shape it runs train/reference/train_gpt.py (the yardstick: BF16
autocast, torch.compile, fused AdamW, fused attention) and `nibble train` for
each recipe, on the same GPU and data, one after another, and prints tokens/s
and each recipe's ratio to the reference. Both time the steps after the first
--timed-from (compilation, allocator and cuBLAS warm-up), synchronized at
both ends; nibble's evaluation and diagnostics are off or excluded.

    python3 train/bench/bench_train.py --nibble build/bin/nibble --data data/brown --out bench.json
"""
import argparse
import json
import os
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nibble", required=True, help="the nibble binary (built with libtorch and CUDA)")
    ap.add_argument("--data", required=True, help="prepared data directory")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ", ".join(SHAPES))
    ap.add_argument("--recipes", default="bf16,e2m1,ufp4,nvfp4")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--timed-from", type=int, default=10)
    ap.add_argument("--out", help="write every measurement here (JSON)")
    a = ap.parse_args()
    if a.timed_from != 10:
        raise SystemExit("bench_train: nibble train times from step 10; keep --timed-from 10")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            if shape not in SHAPES:
                raise SystemExit(f"bench_train: unknown shape '{shape}'; valid: {', '.join(SHAPES)}")
            L, d, H, T, B = SHAPES[shape]
            size = ["--layers", str(L), "--d-model", str(d), "--heads", str(H), "--ctx", str(T), "--batch", str(B)]
            ref = json.loads(run([sys.executable, os.path.join(HERE, "..", "reference", "train_gpt.py"),
                                  "--data", a.data, "--steps", str(a.steps), "--timed-from", str(a.timed_from),
                                  *size]).strip().splitlines()[-1])
            rows.append({"shape": shape, "impl": "pytorch", "recipe": "bf16 (autocast, compiled)",
                         "tokens_per_s": ref["tokens_per_s"], "ms_per_step": ref["ms_per_step"],
                         "parameters": ref["parameters"], "ratio": 1.0, "gpu": ref["gpu"], "torch": ref["torch"]})
            print(f"{shape}: plain PyTorch {ref['tokens_per_s']:,.0f} tokens/s ({ref['ms_per_step']:.1f} ms/step)",
                  flush=True)
            for recipe in a.recipes.split(","):
                out = os.path.join(tmp, f"{shape}-{recipe}")
                run([a.nibble, "train", "--recipe", recipe, "--data", a.data, "--steps", str(a.steps),
                     "--diag-every", "0", "--eval-every", "0", "--eval-bytes", "65536", "--device", "cuda",
                     "--out", out, *size])
                with open(os.path.join(out, "run.json")) as f:
                    r = json.load(f)
                tps = r["tokens_per_s"]
                rows.append({"shape": shape, "impl": "nibble", "recipe": recipe, "tokens_per_s": tps,
                             "ms_per_step": B * T / tps * 1000, "parameters": r["parameters"],
                             "ratio": tps / ref["tokens_per_s"], "cuda_graph": r.get("cuda_graph", False)})
                print(f"{shape}: nibble {recipe:6s} {tps:,.0f} tokens/s ({B * T / tps * 1000:.1f} ms/step), "
                      f"{tps / ref['tokens_per_s']:.2f}x plain PyTorch", flush=True)

    print("\n| shape | parameters | plain PyTorch | " + " | ".join(f"nibble {r}" for r in a.recipes.split(",")) + " |")
    print("|---|---|---|" + "---|" * len(a.recipes.split(",")))
    for shape in a.shapes.split(","):
        ref = next(r for r in rows if r["shape"] == shape and r["impl"] == "pytorch")
        cells = [f"{r['tokens_per_s'] / 1e3:,.0f} k tok/s ({r['ratio']:.2f}x)" for r in rows
                 if r["shape"] == shape and r["impl"] == "nibble"]
        print(f"| {shape} | {ref['parameters']:,} | {ref['tokens_per_s'] / 1e3:,.0f} k tok/s | " + " | ".join(cells) + " |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"schema": "nibble-train-bench/1", "steps": a.steps, "timed_from": a.timed_from,
                       "shapes": {k: dict(zip(("layers", "d_model", "heads", "ctx", "batch"), SHAPES[k]))
                                  for k in a.shapes.split(",")}, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()

"""The examples in examples/*.py run on tensors written here, and print what the
module computes (so they cannot rot unnoticed)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nibble


def write_safetensors(path, tensors):
    """A .safetensors file of float32 tensors, written by hand from the format's definition."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, "<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def run_example(source_dir, name, *args):
    p = subprocess.run([sys.executable, os.path.join(source_dir, "examples", name), *map(str, args)],
                       capture_output=True, text=True, env=dict(os.environ))
    assert p.returncode == 0, f"{name}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    return p.stdout


def test_checkpoint_alpha(source_dir, rng, tmp_path, cases):
    layers = {
        "embed.weight": rng.standard_normal((64, 32)).astype(np.float32),
        "block0.attn.weight": (rng.standard_normal((32, 32)) * 0.02).astype(np.float32),
        "block0.norm.bias": rng.standard_normal(32).astype(np.float32),
        "head.weight": rng.laplace(size=(2, 8, 48)).astype(np.float32),
    }
    path = tmp_path / "model.safetensors"
    write_safetensors(path, layers)
    out = run_example(source_dir, "checkpoint_alpha.py", path, "--rht", 16, "--formats", "e2m1,e1m2")
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    for name, w in layers.items():
        if w.ndim < 2:
            cases.check("(skipped:" in lines[name], f"{name} is skipped: {lines[name]}")
            continue
        for i, f in enumerate(("e2m1", "e1m2")):
            alpha = nibble.measure(w, format=f, scale="nvfp4", rht=16)["alpha"]
            cases.check(lines[name][2 + i] == f"{alpha:.5f}", f"{name} {f}: printed {lines[name][2 + i]}, alpha {alpha}")
    cases.check("product over 3 layers" in out, out)


def test_shrinkage_bias(source_dir, rng, tmp_path, cases):
    x = rng.standard_normal((128, 64)).astype(np.float32)
    np.save(tmp_path / "act.npy", x)
    out = run_example(source_dir, "shrinkage_bias.py", tmp_path / "act.npy")
    m = nibble.measure(x, format="e2m1", scale="nvfp4")
    row = next(line.split() for line in out.splitlines() if line.startswith("e2m1 "))
    cases.check(row[1:3] == [f"{m['sqnr_db']:.3f}", f"{m['alpha']:.5f}"], f"e2m1 row {row}")
    cases.check("e2m1: bias per level" in out and "int4: bias per level" in out, out)
    level4 = next(line.split() for line in out.split("e2m1: bias per level")[1].splitlines() if line.split()[:1] == ["4"])
    cases.check(level4[1] == "-0.25000", f"predicted E2M1 bias at 4: {level4}")


def test_torch_recipe(source_dir, cases):
    pytest.importorskip("torch")
    out = run_example(source_dir, "torch_recipe.py", "--steps", 2, "--recipes", "bf16,ufp4,ufp4-int4")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
    cases.check(set(rows) == {"bf16", "ufp4", "ufp4-int4"}, out)
    # E1M2 and INT4 give identical GEMMs, so the two recipes train identically.
    cases.check(rows["ufp4"] == rows["ufp4-int4"], out)
    cases.check(rows["ufp4"] != rows["bf16"], out)

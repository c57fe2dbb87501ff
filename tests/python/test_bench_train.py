"""train/bench/bench_train.py's rounds and medians, against stand-ins for the two trainers.

The stand-ins (written here) answer the benchmark's calls as the real ones do (the
yardstick's last line of JSON, nibble's run.json) with tokens/s taken in turn from
lists, and log each call, so that the order of the runs and every reported median,
range and ratio can be checked without a GPU.
"""
import json
import os
import stat
import subprocess
import sys

FAKE = r'''
import json, os, sys
state_path = os.environ["FAKE_STATE"]
with open(state_path) as f:
    state = json.load(f)
args = sys.argv[1:]
if args == ["--version"]:
    print("nibble stand-in")
    sys.exit(0)
name = "reference" if args[0] != "train" else args[args.index("--recipe") + 1]
state["log"].append(name)
if state.get("fail") == name:
    sys.exit(3)
tps = state[name].pop(0)
with open(state_path, "w") as f:
    json.dump(state, f)
if name == "reference":
    print("step 10 ...")
    print(json.dumps({"tokens_per_s": tps, "ms_per_step": 1000.0 * 8192 / tps, "parameters": 123,
                      "gpu": "stand-in", "torch": "none"}))
else:
    out = args[args.index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"tokens_per_s": tps, "parameters": 123}, f)
'''


def stand_ins(tmp_path, state):
    ref = tmp_path / "reference.py"
    ref.write_text(FAKE)
    nib = tmp_path / "nibble"
    nib.write_text(f"#!{sys.executable}\n" + FAKE)
    nib.chmod(nib.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "state.json").write_text(json.dumps(dict(state, log=[])))
    return ref, nib


def bench(source_dir, tmp_path, ref, nib, *args):
    env = dict(os.environ, FAKE_STATE=str(tmp_path / "state.json"))
    return subprocess.run([sys.executable, os.path.join(source_dir, "train", "bench", "bench_train.py"),
                           "--nibble", str(nib), "--reference", str(ref), "--data", str(tmp_path),
                           "--shapes", "6.5M", *args], capture_output=True, text=True, env=env)


def test_rounds_alternate_and_report_medians_of_same_round_ratios(source_dir, tmp_path, cases):
    ref, nib = stand_ins(tmp_path, {"reference": [100.0, 200.0, 150.0], "e2m1": [40.0, 70.0, 60.0],
                                    "bf16": [300.0, 500.0, 100.0]})
    out = tmp_path / "bench.json"
    p = bench(source_dir, tmp_path, ref, nib, "--recipes", "e2m1,bf16", "--repeat", "3", "--out", str(out))
    cases.check(p.returncode == 0, p.stdout + p.stderr)
    log = json.loads((tmp_path / "state.json").read_text())["log"]
    cases.check(log == ["reference", "e2m1", "bf16"] * 3, f"runs in the order {log}")
    d = json.loads(out.read_text())
    cases.check(d["schema"] == "nibble-train-bench/2" and d["repeat"] == 3, d["schema"])
    cases.check(d["nibble"] == "nibble stand-in" and d["command"].startswith("python3 train/bench/bench_train.py")
                and "--repeat 3" in d["command"], f"{d['nibble']}: {d['command']}")
    cases.check(len(d["rounds"]) == 9 and [r["round"] for r in d["rounds"]] == [0] * 3 + [1] * 3 + [2] * 3,
                "every round recorded")
    rows = {r["recipe"] if r["impl"] == "nibble" else "reference": r for r in d["rows"]}
    cases.check(list(rows) == ["reference", "e2m1", "bf16"], list(rows))
    want = {
        # median tokens/s, its range, median of the ratios to the same round's reference, their range
        "reference": (150.0, [100.0, 200.0], 1.0, [1.0, 1.0]),
        "e2m1": (60.0, [40.0, 70.0], 0.4, [0.35, 0.4]),
        "bf16": (300.0, [100.0, 500.0], 2.5, [2.0 / 3.0, 3.0]),
    }
    for name, (tps, tps_range, ratio, ratio_range) in want.items():
        r = rows[name]
        cases.check(r["rounds"] == 3, name)
        cases.check(r["tokens_per_s"] == tps and r["tokens_per_s_range"] == tps_range, f"{name}: {r}")
        cases.check(abs(r["ratio"] - ratio) < 1e-12, f"{name}: ratio {r['ratio']}, expected {ratio}")
        cases.check(all(abs(a - b) < 1e-12 for a, b in zip(r["ratio_range"], ratio_range)), f"{name}: {r}")
    cases.check("median of 3 rounds" in p.stdout and "0.40x, 0.35–0.40x" in p.stdout, p.stdout)
    cases.check(not (tmp_path / "bench.json.tmp").exists(), "temporary file left")


def test_one_round_keeps_the_plain_table(source_dir, tmp_path, cases):
    ref, nib = stand_ins(tmp_path, {"reference": [1.0e6], "ufp4": [3.5e5]})
    p = bench(source_dir, tmp_path, ref, nib, "--recipes", "ufp4", "--out", str(tmp_path / "b.json"))
    cases.check(p.returncode == 0, p.stdout + p.stderr)
    cases.check("| 6.5M | 123 | 1,000 k tok/s | 350 k tok/s (0.35x) |" in p.stdout, p.stdout)
    d = json.loads((tmp_path / "b.json").read_text())
    cases.check(d["rows"][1]["ratio"] == 0.35 and d["rows"][1]["rounds"] == 1, d["rows"])


def test_bad_input_and_a_failed_run_write_nothing(source_dir, tmp_path, cases):
    ref, nib = stand_ins(tmp_path, {"reference": [100.0, 100.0], "e2m1": [40.0, 40.0], "fail": "e2m1"})
    out = tmp_path / "bench.json"
    for args, message in [(["--repeat", "0"], "--repeat must be at least 1"),
                          (["--repeat", "2", "--shapes", "7M"], "unknown shape '7M'"),
                          (["--repeat", "2"], "failed (3)")]:
        p = bench(source_dir, tmp_path, ref, nib, "--recipes", "e2m1", "--out", str(out), *args)
        cases.check(p.returncode != 0 and message in p.stdout + p.stderr, f"{args}: {p.stdout}{p.stderr}")
        cases.check(not out.exists() and not (tmp_path / "bench.json.tmp").exists(), f"{args}: output written")

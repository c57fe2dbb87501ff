"""The recorded area and energy results through the report's reader, against the file itself."""
import json
import math
import os

import numpy as np

import nibble


def test_recorded_area_energy(source_dir, cases):
    path = os.path.join(source_dir, "docs", "results", "area-energy.json")
    raw = json.load(open(path))
    data = nibble.area_energy(os.path.dirname(path))
    cases.check(data.present and data.problem == "", f"present: {data.problem}")
    cases.check(data.schema == raw["schema"], f"schema {data.schema}")
    cases.check(data.mixfp4_area_percent == raw["mixfp4"]["area_percent"], "MixFP4 area")
    cases.check(data.commands == raw["commands"], "commands")
    area = data.area
    want = [e for e in raw["area"] if "config" in e and isinstance(e.get("area"), (int, float))]
    cases.check(len(area) == len(want) > 0, f"{len(area)} area records, file has {len(want)}")
    for got, w in zip(area, want):
        cases.check(got["config"] == w["config"] and got["area"] == w["area"] and got["unit"] == w["area_unit"],
                    f"area record {w['config']} {w['library']}")
        cases.check(got["table"].startswith(w["library"]), f"table {got['table']} of {w['library']}")
    energy = data.energy
    want = [e for e in raw["energy"] if isinstance(e.get("energy_per_mac"), (int, float))]
    cases.check(len(energy) == len(want) > 0, f"{len(energy)} energy records, file has {len(want)}")
    for got, w in zip(energy, want):
        cases.check((got["config"], got["format"], got["operands"], got["energy_per_mac"]) ==
                    (w["config"], w["format"], w["operands"], w["energy_per_mac"]), f"energy record {w}")
    e = energy[(energy["config"] == "all") & (energy["format"] == "e1m2") & (energy["operands"] == "gaussian")][0]
    base = energy[(energy["table"] == e["table"]) & (energy["config"] == "e2m1") & (energy["format"] == "e2m1") &
                  (energy["operands"] == "gaussian")][0]
    want_pct = 100 * (e["energy_per_mac"] - base["energy_per_mac"]) / base["energy_per_mac"]
    got_pct = data.energy_percent(str(e["table"]), "all", "e1m2")
    cases.check(math.isclose(got_pct, want_pct, rel_tol=1e-12), f"energy_percent {got_pct} vs {want_pct}")
    cases.check(math.isnan(data.energy_percent(str(e["table"]), "nonesuch", "e1m2")), "absent record is NaN")


def test_default_results_are_the_recorded_ones(cases):
    data = nibble.area_energy()
    cases.check(data.present and len(data.area) > 0, "default results dir reads")


FAKE_AREA = """#!{python}
# Stands in for `nibble area`: records its arguments, then answers as the case asks.
import json, sys
args = sys.argv[1:]
json.dump(args, open({argv!r}, "w"))
if "--unit" in args and args[args.index("--unit") + 1] == "bad":
    sys.stderr.write("some output\\nnibble: error: --unit: unknown unit 'bad'\\n")
    sys.exit(2)
if "--unit" in args and args[args.index("--unit") + 1] == "crash":
    sys.exit(1)
rows = [
    {{"config": "e2m1", "label": "E2M1-only", "area": 100.0, "cells": 10, "sta": {{"critical_path_ns": 3.5}}}},
    {{"config": "all", "label": "E2M1+E1M2+INT4", "area": 104.0, "cells": 11, "sta": {{"critical_path_ns": 3.25}},
      "percent_vs_e2m1": 4.0}},
]
json.dump({{"top": ["nibble_dpu"], "configs": rows}}, open(args[args.index("--json") + 1], "w"))
"""


def fake_area(tmp_path):
    import sys
    exe = tmp_path / "nibble"
    argv = tmp_path / "argv.json"
    exe.write_text(FAKE_AREA.format(python=sys.executable, argv=str(argv)))
    exe.chmod(0o755)
    return exe, argv


def test_synthesize_passes_the_flags_and_reads_the_results(tmp_path, cases):
    exe, argv = fake_area(tmp_path)
    got = nibble.synthesize("dpu", ["e2m1", "all"], lane_design=["own-unit", "split"], liberty="x.lib", sta=True,
                            mapping="timing", clock_ns=5, cache=tmp_path / "c", executable=exe)
    args = json.load(open(argv))
    cases.check(args[:5] == ["area", "--unit", "dpu", "--configs", "e2m1,all"], f"arguments {args}")
    for flag, value in (("--lane-design", "own-unit,split"), ("--liberty", "x.lib"), ("--map", "timing"),
                        ("--clock-ns", "5"), ("--cache", str(tmp_path / "c"))):
        cases.check(flag in args and args[args.index(flag) + 1] == value, f"{flag} in {args}")
    cases.check("--sta" in args and "--breakdown" not in args and "--json" in args, f"switches in {args}")
    rows = got["configs"]
    cases.check(list(rows["config"]) == ["e2m1", "all"] and list(rows["area"]) == [100.0, 104.0], f"rows {rows}")
    cases.check(list(rows["sta_critical_path_ns"]) == [3.5, 3.25], "nested fields flattened")
    cases.check(math.isnan(rows["percent_vs_e2m1"][0]) and rows["percent_vs_e2m1"][1] == 4.0,
                "a key one row lacks is NaN there")
    cases.check(got["top"] == ["nibble_dpu"], "the rest of the JSON as it is")


def test_synthesize_errors(tmp_path, cli, cases):
    exe, _ = fake_area(tmp_path)
    try:
        nibble.synthesize("bad", executable=exe)
        cases.check(False, "exit 2 raised nothing")
    except ValueError as e:
        cases.check(str(e) == "--unit: unknown unit 'bad'", f"message {e}")
    try:
        nibble.synthesize("crash", executable=exe)
        cases.check(False, "exit 1 raised nothing")
    except RuntimeError as e:
        cases.check("exit 1" in str(e), f"message {e}")
    # The real command refuses bad flags before any synthesis starts.
    for kwargs in ({"configs": "nonesuch"}, {"unit": "nonesuch"}, {"lane_design": "nonesuch"}, {"clock_ns": -1}):
        try:
            nibble.synthesize(executable=cli, **kwargs)
            cases.check(False, f"{kwargs}: no error")
        except ValueError as e:
            cases.check("nonesuch" in str(e) or "clock" in str(e), f"{kwargs}: {e}")
    try:
        nibble.synthesize(executable=tmp_path / "missing")
        cases.check(False, "a missing command raised nothing")
    except FileNotFoundError:
        cases.check(True, "missing command")

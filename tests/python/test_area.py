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

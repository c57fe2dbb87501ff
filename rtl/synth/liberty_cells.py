#!/usr/bin/env python3
"""Cell models for Nibble's gate-level energy estimator, from a Liberty file.

  liberty_cells.py LIB[.gz] OUT.json [--slew NS]

Writes one JSON object: the library's units and nominal voltage, and per cell
  area, leakage (cell_leakage_power, library leakage unit),
  inputs:  [{name, cap, energy}]   energy = internal energy of one input toggle (mean of the
                                   pin's rise_power / fall_power at the nominal input slew)
  outputs: [{name, inputs, lut, ff_out, loads, energies}]
           lut: the output `function` as a truth table over `inputs` (bit i = value for the
           input assignment whose bit j is inputs[j]); ff_out: "IQ"/"IQN" for a flop output;
           loads/energies: internal energy of one output toggle vs load (mean over related
           pins, rise and fall, and `when` conditions, at the nominal slew)
  ff:      {clock, next: {inputs, lut}, clear: {inputs, lut} | null, preset: ... | null}
  toggle_energy / clock_energy: Nibble's own attributes (nibble_generic.lib), when present.
Cells without a function on some output (tristate, analog, latches, ...) are listed under
"skipped" with the reason; a netlist that uses one is refused by the simulator.
"""
import argparse
import gzip
import itertools
import json
import re
import sys


def tokenize(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = text.replace("\\\n", " ")
    return re.findall(r'"(?:[^"\\]|\\.)*"|[{}();:,]|[^\s{}();:,"]+', text)


def parse(tokens):
    """Groups as {'name','args','attrs':[(k,v)],'groups':[...]}."""
    pos = 0

    def value_list():
        nonlocal pos
        vals = []
        while tokens[pos] != ")":
            if tokens[pos] != ",":
                vals.append(tokens[pos].strip('"'))
            pos += 1
        pos += 1
        return vals

    def group_body(g):
        nonlocal pos
        while tokens[pos] != "}":
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
                val = []
                while tokens[pos] != ";" and tokens[pos] != "}":
                    val.append(tokens[pos].strip('"'))
                    pos += 1
                if tokens[pos] == ";":
                    pos += 1
                g["attrs"].append((name, " ".join(val)))
            elif tokens[pos] == "(":
                pos += 1
                args = value_list()
                if pos < len(tokens) and tokens[pos] == "{":
                    pos += 1
                    sub = {"name": name, "args": args, "attrs": [], "groups": []}
                    group_body(sub)
                    g["groups"].append(sub)
                else:
                    if pos < len(tokens) and tokens[pos] == ";":
                        pos += 1
                    g["attrs"].append((name, args))
            else:  # stray token
                pass
        pos += 1

    while tokens[pos] != "library":
        pos += 1
    pos += 1
    assert tokens[pos] == "("
    pos += 1
    args = value_list()
    assert tokens[pos] == "{"
    pos += 1
    lib = {"name": "library", "args": args, "attrs": [], "groups": []}
    group_body(lib)
    return lib


def attr(g, k, default=None):
    for kk, v in g["attrs"]:
        if kk == k:
            return v
    return default


def groups(g, name):
    return [s for s in g["groups"] if s["name"] == name]


def floats(s):
    if isinstance(s, list):
        s = ",".join(s)
    return [float(x) for x in re.split(r"[,\s]+", s.strip()) if x]


def expr_vars(expr):
    return sorted(set(re.findall(r"[A-Za-z_][\w\[\]]*", expr)))


def truth_table(expr, inputs):
    if len(inputs) > 6:
        raise ValueError("more than 6 inputs")
    lut = 0
    for i, bits in enumerate(itertools.product([0, 1], repeat=len(inputs))):
        v = {name: (i >> j) & 1 for j, name in enumerate(inputs)}
        if eval_expr(expr, v):
            lut |= 1 << i
    return lut


def eval_expr(expr, v):
    toks = [t for t in re.findall(r"[A-Za-z_][\w\[\]]*|[01]|[!'*&+|^()]", expr)]
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def or_expr():
        nonlocal pos
        x = xor_expr()
        while peek() in ("+", "|"):
            pos += 1
            x = x | xor_expr()
        return x

    def xor_expr():
        nonlocal pos
        x = and_expr()
        while peek() == "^":
            pos += 1
            x = x ^ and_expr()
        return x

    def and_expr():
        nonlocal pos
        x = unary()
        while True:
            p = peek()
            if p in ("*", "&"):
                pos += 1
                x = x & unary()
            elif p is not None and (p in ("!", "(", "0", "1") or re.match(r"[A-Za-z_]", p)):
                x = x & unary()  # juxtaposition
            else:
                return x

    def unary():
        nonlocal pos
        p = peek()
        if p == "!":
            pos += 1
            x = 1 - unary()
        elif p == "(":
            pos += 1
            x = or_expr()
            if peek() != ")":
                raise ValueError("unbalanced parentheses in %r" % expr)
            pos += 1
        elif p in ("0", "1"):
            pos += 1
            x = int(p)
        elif p is not None and re.match(r"[A-Za-z_]", p):
            pos += 1
            if p not in v:
                raise ValueError("unknown pin %s in %r" % (p, expr))
            x = v[p]
        else:
            raise ValueError("cannot parse %r" % expr)
        while peek() == "'":
            pos += 1
            x = 1 - x
        return x

    r = or_expr()
    if pos != len(toks):
        raise ValueError("trailing tokens in %r" % expr)
    return r


def interp(xs, ys, x):
    if len(xs) == 1:
        return ys[0]
    if x <= xs[0]:
        i = 0
    elif x >= xs[-1]:
        i = len(xs) - 2
    else:
        i = max(j for j in range(len(xs) - 1) if xs[j] <= x)
    t = (x - xs[i]) / (xs[i + 1] - xs[i])
    return ys[i] + t * (ys[i + 1] - ys[i])


def table_energy(tbl, templates, slew):
    """Energy vs load (loads, energies) of one power table at the nominal input slew; a
    table without a load axis gives a single point."""
    tmpl = templates.get(tbl["args"][0] if tbl["args"] else "", {})
    v1 = tmpl.get("variable_1", "input_transition_time")
    v2 = tmpl.get("variable_2")
    i1 = floats(attr(tbl, "index_1")) if attr(tbl, "index_1") is not None else None
    i2 = floats(attr(tbl, "index_2")) if attr(tbl, "index_2") is not None else None
    vals = attr(tbl, "values")
    rows = [floats(r) for r in vals] if isinstance(vals, list) else [floats(vals)]
    if i1 is None:  # scalar
        return [0.0], [rows[0][0]]
    if v2 is None:  # 1-D
        flat = rows[0] if len(rows) == 1 else [r[0] for r in rows]
        if "capacitance" in v1:
            return i1, flat
        return [0.0], [interp(i1, flat, slew)]
    if "capacitance" in v1:  # (load, slew): rows over load
        loads = i1
        energies = [interp(i2, r, slew) for r in rows]
    else:  # (slew, load): rows over slew
        loads = i2
        energies = [interp(i1, [r[k] for r in rows], slew) for k in range(len(i2))]
    return loads, energies


def mean_curves(curves):
    """Mean of (loads, energies) curves, on the first curve's load axis."""
    if not curves:
        return [0.0], [0.0]
    loads = max(curves, key=lambda c: len(c[0]))[0]
    es = [sum(interp(c[0], c[1], x) for c in curves) / len(curves) for x in loads]
    return loads, es


def cell_model(cell, templates, slew, arc_sum=False):
    pins = groups(cell, "pin")
    for b in groups(cell, "bus") + groups(cell, "bundle"):
        raise ValueError("bus pins unsupported")
    if groups(cell, "latch") or groups(cell, "statetable"):
        raise ValueError("latch/statetable")
    ffs = groups(cell, "ff")
    if len(ffs) > 1:
        raise ValueError("several ff groups")
    inputs, outputs = [], []
    for p in pins:
        name = p["args"][0]
        d = attr(p, "direction")
        if d == "input":
            curves = []
            for ip in groups(p, "internal_power"):
                for k in ("rise_power", "fall_power", "power"):
                    for t in groups(ip, k):
                        curves.append(table_energy(t, templates, slew))
            e = sum(c[1][0] for c in curves) / len(curves) if curves else 0.0
            inputs.append({"name": name, "cap": float(attr(p, "capacitance", 0) or 0),
                           "energy": e, "clock": attr(p, "clock") == "true"})
        elif d == "output":
            f = attr(p, "function")
            if f is None or attr(p, "three_state") is not None:
                raise ValueError("output %s without function or tristate" % name)
            by_pin = {}
            for ip in groups(p, "internal_power"):
                for k in ("rise_power", "fall_power", "power"):
                    for t in groups(ip, k):
                        by_pin.setdefault(attr(ip, "related_pin", ""), []).append(
                            table_energy(t, templates, slew))
            # per related pin: the mean of its rise/fall tables and `when` conditions; then the
            # mean over related pins (one output toggle, whichever input caused it), or with
            # arc_sum their sum (OpenSTA 2019's vectorless convention: every input toggle at the
            # given activity charges its arc)
            per_pin = [mean_curves(cs) for cs in by_pin.values()]
            loads, es = mean_curves(per_pin)
            if arc_sum:
                es = [e * len(per_pin) for e in es]
            outputs.append({"name": name, "function": f, "loads": loads, "energies": es})
        else:
            raise ValueError("pin %s direction %s" % (name, d))
    in_names = [i["name"] for i in inputs]
    ff = None
    state = []
    if ffs:
        g = ffs[0]
        state = [a.strip() for a in g["args"]]
        clk = attr(g, "clocked_on").strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", clk):
            raise ValueError("clocked_on %r (only a rising-edge pin)" % clk)

        def fn(key):
            e = attr(g, key)
            if e is None:
                return None
            ins = [n for n in in_names if n in expr_vars(e)]
            return {"inputs": ins, "lut": truth_table(e, ins)}

        ff = {"clock": clk, "next": fn("next_state"), "clear": fn("clear"), "preset": fn("preset")}
        if attr(g, "clear_preset_var1") is not None and ff["clear"] and ff["preset"]:
            pass  # both active never happens in a reset-only design; clear wins below
    for o in outputs:
        vs = expr_vars(o["function"])
        if ff and set(vs) <= set(state):
            if vs == [state[0]] and o["function"].strip() == state[0]:
                o["ff_out"] = "IQ"
            elif len(state) > 1 and o["function"].strip() == state[1]:
                o["ff_out"] = "IQN"
            elif vs == [state[0]] and re.fullmatch(r"\s*!\s*%s\s*|\s*%s\s*'\s*" % (state[0], state[0]),
                                                     o["function"]):
                o["ff_out"] = "IQN"
            else:
                raise ValueError("flop output function %r" % o["function"])
            o["inputs"], o["lut"] = [], 0
        else:
            if set(vs) & set(state):
                raise ValueError("output mixes state and inputs")
            ins = [n for n in in_names if n in vs]
            o["inputs"], o["lut"] = ins, truth_table(o["function"], ins)
    m = {"area": float(attr(cell, "area", 0) or 0),
         "leakage": float(attr(cell, "cell_leakage_power", 0) or 0),
         "inputs": inputs, "outputs": outputs, "ff": ff}
    for k, kk in (("nibble_toggle_energy", "toggle_energy"), ("nibble_clock_energy", "clock_energy")):
        if attr(cell, k) is not None:
            m[kk] = float(attr(cell, k))
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("liberty")
    ap.add_argument("out")
    ap.add_argument("--slew", type=float, default=0.1,
                    help="nominal input transition for the power tables (library time unit)")
    ap.add_argument("--arc-sum", action="store_true",
                    help="output internal energy = sum over related pins (OpenSTA's vectorless "
                         "convention; for tests/synth's cross-check), not the mean")
    a = ap.parse_args()
    opener = gzip.open if a.liberty.endswith(".gz") else open
    try:
        with opener(a.liberty, "rt", errors="replace") as f:
            lib = parse(tokenize(f.read()))
    except (OSError, AssertionError, IndexError) as e:
        print("liberty_cells: error: cannot read %s: %s" % (a.liberty, e), file=sys.stderr)
        return 2
    templates = {}
    for g in groups(lib, "power_lut_template") + groups(lib, "lu_table_template"):
        templates[g["args"][0]] = {k: v for k, v in g["attrs"] if k.startswith("variable")}
    volt = None
    for oc in groups(lib, "operating_conditions"):
        if attr(oc, "voltage") is not None:
            volt = float(attr(oc, "voltage"))
    if volt is None:
        volt = float(attr(lib, "nom_voltage", 1.0))
    cap_unit = attr(lib, "capacitive_load_unit", ["1", "pf"])
    out = {"library": lib["args"][0], "voltage": volt,
           "capacitive_load_unit": [float(cap_unit[0]), cap_unit[1].lower()],
           "leakage_power_unit": attr(lib, "leakage_power_unit", "1nW"),
           "time_unit": attr(lib, "time_unit", "1ns"),
           "slew": a.slew, "cells": {}, "skipped": {}}
    for c in groups(lib, "cell"):
        name = c["args"][0]
        try:
            out["cells"][name] = cell_model(c, templates, a.slew, a.arc_sum)
        except (ValueError, TypeError, KeyError) as e:
            out["skipped"][name] = str(e)
    if not out["cells"]:
        print("liberty_cells: error: no usable cells in %s" % a.liberty, file=sys.stderr)
        return 2
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Nibble from Python: the golden model on NumPy arrays, the shrinkage-bias
diagnostics of ``nibble quant``, the recorded area and energy results, and the
synthesis flow where Yosys is installed.

Everything numeric is computed by Nibble's C++ libraries (the compiled module
``nibble._nibble``): golden quantizes, dequantizes and multiplies; the analysis
library measures. Names of formats, scale modes, block shapes and roundings are
golden's own (``nibble.formats``, ``nibble.scale_modes``, ...).

Arrays in: a C-contiguous float32 array is used in place (no copy); float16,
float64 and other real floating dtypes, and non-contiguous arrays, are
converted to float32 by NumPy first (float64 rounds to nearest even); any other
dtype is a TypeError. A tensor is seen as the matrix [rows, last axis], the
last axis being the contraction axis along which blocks and the RHT run
(as ``nibble quant --tensor`` and ``nibble golden-quant`` see it).

Errors: bad arguments raise ValueError with golden's message (TypeError for a
wrong type), a defective file raises ``nibble.TensorFileError`` (a ValueError),
a missing one FileNotFoundError.
"""
import json
import os
import shutil
import subprocess
import tempfile

from . import _nibble
from ._nibble import (  # noqa: F401  (re-exported)
    AreaEnergy,
    QuantConfig,
    QuantizedTensor,
    Recipe,
    TensorFileError,
    block_dot,
    block_shapes,
    compare_quantized,
    decode,
    dequantize,
    distributions,
    dot_rows,
    encode,
    format_info,
    formats,
    gemm,
    gemm_seed,
    list_safetensors,
    operand_role,
    quantized_tensor,
    recipe_gemms,
    recipes,
    rht_sizes,
    roundings,
    scale_format_info,
    scale_format_of,
    scale_formats,
    scale_modes,
    synthetic,
    write_quantized,
    zero_policies,
    nonfinite_policies,
)
from ._records import records

__version__ = _nibble.__version__


def _config(config, settings):
    if config is None:
        return QuantConfig(**settings)
    if settings:
        raise TypeError("give either a QuantConfig or keyword settings, not both")
    if not isinstance(config, QuantConfig):
        raise TypeError("config must be a nibble.QuantConfig")
    return config


def quantize(x, config=None, **settings):
    """Quantizes x with golden: a QuantizedTensor of codes, block scales and tensor scale.

    Settings are a QuantConfig or its keywords: format, block, scale, rounding,
    sr_bits, rht (0 = off), rht_bf16, seed, stream, and the policies zero
    ("positive" or "signed") and nonfinite ("finite" or "propagate";
    docs/numerics.md section 3). With an RHT, x is rotated along its last axis
    first and the codes are in the rotated domain. Under nonfinite="finite" (the
    default) a block holding NaN or Inf gets its scale format's NaN code, as
    golden defines it, also where no value is finite (which ``nibble
    golden-quant`` refuses); under "propagate" NaN and Inf go through the scale
    rules as in Transformer Engine's NVFP4 reference.
    """
    return _nibble._quantize(x, _config(config, settings))


def measure(x, config=None, **settings):
    """What quantizing x under one configuration does to it, as ``nibble quant`` reports it.

    A dict with sqnr_db, nmse, alpha (<q,x>/||x||^2), rel_mag_error
    (E[|q|-|x|]/E|x|), code_entropy_bits, b_eff (2^H/15), level_bias (a
    structured array: level, count, bias in the scaled domain) and
    nonfinite_zeroed (non-finite values of x, set to 0 as the CLI does).
    With an RHT, everything is measured in the rotated domain.
    """
    out = _nibble._measure(x, _config(config, settings))
    out["level_bias"] = records(out["level_bias"])
    return out


def quant_matrix(x, *, name="x", formats=formats, scales=scale_modes, blocks=block_shapes, rht=(0, 16),
                 roundings=roundings, sr_bits=8, seed=0, zero="positive", nonfinite="finite"):
    """The diagnostics matrix of ``nibble quant --tensor``: x under every listed combination.

    Returns a dict: "input" (name, rows, cols, nonfinite_zeroed) and "rows", a
    structured array with one row per format x scale x block x rounding x RHT
    (outermost first) and the fields of ``nibble quant --json``: input, format,
    scale, block, rht ("off" or the size), rounding, sr_bits, sqnr_db,
    delta_sqnr_rht (NaN without an RHT), nmse, alpha, rel_mag_error,
    code_entropy_bits, b_eff, level_bias. rht lists sizes, 0 for none. zero
    and nonfinite are the quantizer's policies, as ``nibble quant --zero
    --nonfinite`` takes them.
    """
    out = _nibble._quant_matrix(x, name, list(formats), list(scales), list(blocks), list(rht), list(roundings),
                                sr_bits, seed, zero, nonfinite)
    out["rows"] = records(out["rows"])
    return out


def grid_level_bias(format):
    """The predicted RNE bias at each positive level of a format's grid, for a flat density.

    A structured array: level, below, above, ell, r, bias (golden's stats.h).
    """
    return records(_nibble.grid_level_bias(format))


def chain(configs, *, layers=8, width=256, batch=64, seed=0):
    """The compounding chain of ``nibble quant --chain``: a batch through random linear layers.

    configs: one QuantConfig or a list of them, each run on the same problem
    (input and weights from `seed`; each config's own seed keys its RHT signs
    and SR bits; ``nibble quant --chain`` uses --seed for both). Returns a dict:
    layers, width, batch and runs, one per config (format, scale, block, rht,
    rounding, and depths: a structured array of depth, eta, cosine).
    """
    if isinstance(configs, QuantConfig):
        configs = [configs]
    out = _nibble._chain(list(configs), layers, width, batch, seed)
    for run in out["runs"]:
        run["depths"] = records(run["depths"])
    return out


def _existing(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    return path


def read_tensor(path, name=""):
    """A tensor from a .npy or .safetensors file, as float32 in its own shape.

    Nibble's readers: f16, bf16 and f64 are converted as ``nibble quant
    --tensor`` converts them. `name` selects a tensor of a .safetensors file
    holding several (``list_safetensors`` lists them).
    """
    return _nibble._read_tensor(_existing(path), name)


def read_quantized(path):
    """The quantized tensors of a quantized-tensor file (``nibble golden-quant --out``), by name."""
    return _nibble._read_quantized(_existing(path))


def _default_results_dir():
    installed = os.path.join(os.path.dirname(__file__), "results")
    return installed if os.path.isdir(installed) else _nibble.source_results_dir


def area_energy(results_dir=None):
    """The recorded area and energy results (area-energy.json), read as ``nibble report`` reads them.

    results_dir defaults to the results installed with the package, or the
    source tree's docs/results. The AreaEnergy has ``area`` (table, config,
    label, unit, area, percent_vs_e2m1) and ``energy`` (table, config, format,
    operands, unit, energy_per_mac, command) as structured arrays, the
    ``commands`` that made them, the MixFP4 reference figures and
    ``energy_percent(table, config, format, operands)``.
    """
    results_dir = os.fspath(results_dir) if results_dir is not None else _default_results_dir()
    data = _nibble._read_area_energy(results_dir)
    if not data.present:
        if not os.path.exists(os.path.join(results_dir, "area-energy.json")):
            raise FileNotFoundError(data.problem)
        raise ValueError(data.problem)
    return data


AreaEnergy.area = property(lambda self: records(self._area), doc="Area per configuration and library.")
AreaEnergy.energy = property(lambda self: records(self._energy),
                             doc="Energy per MAC per configuration, element format and operand set.")


def _cli(executable):
    if executable is not None:
        return os.fspath(executable)
    for c in (os.environ.get("NIBBLE_CLI"), _nibble.build_cli):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which("nibble")
    if found:
        return found
    raise FileNotFoundError("the nibble command was not found: pass executable=, set NIBBLE_CLI or put nibble on PATH")


def _names(value):
    return value if isinstance(value, str) else ",".join(value)


def _flat_rows(rows):
    """The rows of `nibble area --json` as records: nested objects become prefix_key fields,
    and a key some rows lack (percent_vs_e2m1 of a baseline's own row) is None there."""
    flat = []
    for r in rows:
        f = {}
        for k, v in r.items():
            if isinstance(v, dict):
                f.update({f"{k}_{kk}": vv for kk, vv in v.items()})
            else:
                f[k] = v
        flat.append(f)
    keys = list(dict.fromkeys(k for f in flat for k in f))
    return records([{k: f.get(k) for k in keys} for f in flat])


def synthesize(unit="dpu", configs=("e2m1", "all"), *, lanes=None, lane_design=None, scales=None, tile=None,
               liberty=None, mapping=None, breakdown=False, sta=False, clock_ns=None, cache=None, executable=None,
               timeout=None):
    """Runs the synthesis flow (``nibble area``: Yosys, and OpenSTA with sta=True) and returns its results.

    The arguments are ``nibble area``'s flags (names or lists of names where the
    flag takes a comma-separated list; mapping is ``--map``: "area" or "timing",
    the latter against clock_ns on a Liberty with delays). The result is the dict ``--json`` writes,
    its ``configs`` a structured array (one record per synthesized netlist: area,
    cells, flops, depth, percent_vs_e2m1, ... ; ``sta_*`` and ``sub_blocks_*``
    fields with sta and breakdown). A run takes minutes per netlist; ``cache``
    (a directory, shared with ``nibble area --cache``) makes repeated calls
    instant. The command is ``executable``, else NIBBLE_CLI, else the build
    tree's, else ``nibble`` on PATH. Bad arguments raise ValueError with the
    command's message; a failed flow raises RuntimeError.
    """
    args = [_cli(executable), "area", "--unit", _names(unit), "--configs", _names(configs)]
    for flag, value in (("--lanes", lanes), ("--lane-design", lane_design), ("--scales", scales), ("--tile", tile),
                        ("--liberty", liberty), ("--map", mapping), ("--clock-ns", clock_ns), ("--cache", cache)):
        if value is not None:
            args += [flag, _names(value) if flag in ("--lane-design", "--scales") else str(value)]
    if breakdown:
        args.append("--breakdown")
    if sta:
        args.append("--sta")
    with tempfile.TemporaryDirectory(prefix="nibble-area-") as tmp:
        out = os.path.join(tmp, "area.json")
        proc = subprocess.run(args + ["--json", out], capture_output=True, text=True, timeout=timeout)
        if proc.returncode == 2:
            lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("nibble: error:")]
            raise ValueError(lines[0][len("nibble: error:"):].strip() if lines else proc.stderr.strip())
        if proc.returncode != 0 or not os.path.isfile(out):
            raise RuntimeError(f"nibble area failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        with open(out) as f:
            data = json.load(f)
    data["configs"] = _flat_rows(data.get("configs", []))
    return data

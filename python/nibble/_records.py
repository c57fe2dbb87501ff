"""Lists of records (dicts with the same keys) as NumPy structured arrays.

The compiled module returns the analysis library's results as dicts named
like the JSON of `nibble quant --json`; this turns a list of them into one
structured array, a field per key, so that rows can be sliced by column
(``rows["alpha"]``) and selected by mask (``rows[rows["format"] == "e1m2"]``).
"""
import numpy as np


def _field_dtype(values):
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return np.bool_
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present) and len(present) == len(values):
        return np.int64
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return np.float64  # None (a JSON null, "not recorded") becomes NaN
    if present and all(isinstance(v, str) for v in present) and len(present) == len(values):
        return np.dtype(("U", max(1, max(len(v) for v in present))))
    return np.object_


def _field_value(value, dtype):
    if value is None and dtype == np.float64:
        return np.nan
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return records(value)
    return value


def records(rows):
    """A structured array with one element per dict of `rows` and one field per key.

    Numbers become int64 or float64 (None as NaN), strings fixed-width unicode,
    lists of dicts nested structured arrays (in an object field).
    """
    rows = list(rows)
    if not rows:
        return np.zeros(0, dtype=[])
    keys = list(rows[0].keys())
    for r in rows:
        if list(r.keys()) != keys:
            raise ValueError("records: every row must have the same keys")
    dtypes = [(k, _field_dtype([r[k] for r in rows])) for k in keys]
    out = np.empty(len(rows), dtype=dtypes)
    for i, r in enumerate(rows):
        for k, dt in dtypes:
            out[k][i] = _field_value(r[k], dt)
    return out

"""Shared fixtures of the Python module's tests.

The suite checks `nibble` (the package under test, from PYTHONPATH) against
golden's C++ results reached another way: the C API shared library through
ctypes, and the `nibble` command's files and JSON. ctest passes their paths in
the environment: NIBBLE_CLI, NIBBLE_GOLDEN_C, NIBBLE_SOURCE.

Random inputs come from one seed, printed in the header; NIBBLE_TEST_SEED
sets another. Every check of a value counts one case (the `cases` fixture);
the run fails if fewer than --min-cases were checked, so a suite that checked
nothing cannot pass.
"""
import os

import numpy as np
import pytest

DEFAULT_SEED = 20261128
_checked = {"cases": 0}


def pytest_addoption(parser):
    parser.addoption("--min-cases", type=int, default=1, help="fail unless at least this many cases were checked")


def _seed():
    return int(os.environ.get("NIBBLE_TEST_SEED", DEFAULT_SEED))


def pytest_report_header(config):
    return f"nibble test seed: {_seed()} (set NIBBLE_TEST_SEED to change it)"


def pytest_sessionfinish(session, exitstatus):
    n = _checked["cases"]
    minimum = session.config.getoption("--min-cases")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_line(f"nibble: {n} cases checked (seed {_seed()}, at least {minimum} required)")
    if n < minimum and session.exitstatus == 0:
        session.exitstatus = 1


class Cases:
    """Counts checked cases; `equal` compares arrays bit for bit and says where they differ."""

    def check(self, cond, msg):
        _checked["cases"] += 1
        assert cond, msg

    def equal(self, got, want, what):
        got, want = np.asarray(got), np.asarray(want)
        _checked["cases"] += 1
        assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
        if got.dtype.kind == "f":
            # Bit patterns: +0 and -0 differ; two NaNs of any payload agree.
            width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
            gb, wb = got.view(width), want.view(width)
            differ = (gb != wb) & ~(np.isnan(got) & np.isnan(want))
        else:
            differ = got != want
        if differ.any():
            i = tuple(int(v) for v in np.argwhere(differ)[0])
            g, w = got[i], want[i]
            if got.dtype.kind == "f":
                g, w = f"{g!r} ({int(gb[i]):#x})", f"{w!r} ({int(wb[i]):#x})"
            raise AssertionError(f"{what}: {int(differ.sum())} of {got.size} differ; first at {i}: {g}, expected {w}")


@pytest.fixture
def cases():
    return Cases()


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(_seed())


def _env_path(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through ctest (label python)")
    return value


@pytest.fixture(scope="session")
def cli():
    return _env_path("NIBBLE_CLI")


@pytest.fixture(scope="session")
def golden_c_path():
    return _env_path("NIBBLE_GOLDEN_C")


@pytest.fixture(scope="session")
def source_dir():
    return _env_path("NIBBLE_SOURCE")

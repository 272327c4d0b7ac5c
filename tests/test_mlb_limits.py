#!/usr/bin/env python3
"""The .mlb header rules of tools/mlb.py (check_shape, LIMITS) against the C
loader's (model/loader.c parse_header): the limits in loader.c's source equal
mlb.py's, and for headers at and around every limit and rule, check_shape
accepts exactly those the built loader accepts (a header-only file that the
loader accepts fails next with "truncated", past the header). Also: any
Python value (absurd integers, NaN, strings) is refused with an MlbError,
never another exception, so the converter never writes a model the runtime
refuses, and never prints a traceback for one.

Run from the repo root: python3 tests/test_mlb_limits.py
env BUILD: the build folder holding ml_run (default build/scalar); RUNNER.
"""
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
import mlb  # noqa: E402
from py_checks import Checks  # noqa: E402

BUILD = os.environ.get("BUILD", "build/scalar")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
ML_RUN = os.path.join(BUILD, "ml_run")
BASE = dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=96, vocab=320, max_seq=64,
            rope_theta=10000.0, norm_eps=1e-5, wtype=mlb.TYPE_Q8_0, shared_classifier=1)
U32 = (1 << 32) - 1


def f32_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def header_bytes(h):
    """h's header with floats given as float32 bit patterns (any value)."""
    raw = struct.pack("<4s8I", mlb.MAGIC, mlb.VERSION, h["dim"], h["n_layers"], h["n_heads"],
                      h["n_kv_heads"], h["hidden_dim"], h["vocab"], h["max_seq"])
    raw += struct.pack("<2I2I", h["theta_bits"], h["eps_bits"], h["wtype"], h["shared_classifier"])
    return raw + bytes(mlb.HEADER_BYTES - len(raw))


def cases():
    """(label, header dict with theta_bits/eps_bits)."""
    base = dict(BASE, theta_bits=struct.unpack("<I", struct.pack("<f", 10000.0))[0],
                eps_bits=struct.unpack("<I", struct.pack("<f", 1e-5))[0])
    out = [("the base header", dict(base))]
    for k, lo, hi in mlb.LIMITS:
        hi = base[hi] if isinstance(hi, str) else hi
        for v in sorted({lo - 1, lo, hi, hi + 1, 1 << 31, U32} - {-1}):
            out.append((f"{k} = {v}", dict(base, **{k: v})))
    for label, edit in (("dim 48", dict(dim=48)), ("dim 96", dict(dim=96, n_heads=4)),
                        ("hidden_dim 100", dict(hidden_dim=100)), ("n_heads 3", dict(n_heads=3)),
                        ("n_heads 64 (head_dim 1)", dict(n_heads=64, n_kv_heads=1)),
                        ("n_heads 32 (head_dim 2)", dict(n_heads=32, n_kv_heads=1)),
                        ("n_kv_heads 3", dict(n_kv_heads=3)), ("n_kv_heads 4", dict(n_kv_heads=4)),
                        ("dim at the limit", dict(dim=mlb.MAX_DIM, n_heads=2, n_kv_heads=1)),
                        ("hidden_dim at the limit", dict(hidden_dim=4 * mlb.MAX_DIM)),
                        ("wtype 0", dict(wtype=0)), ("wtype 2", dict(wtype=2)), ("wtype 3", dict(wtype=3)),
                        ("shared_classifier 0", dict(shared_classifier=0)),
                        ("shared_classifier 2", dict(shared_classifier=2))):
        out.append((label, dict(base, **edit)))
    floats = dict(one=0x3F800000, above_one=0x3F800001, below_one=0x3F7FFFFF, zero=0, neg_zero=0x80000000,
                  minus_one=0xBF800000, nan=0x7FC00000, inf=0x7F800000, neg_inf=0xFF800000,
                  big=struct.unpack("<I", struct.pack("<f", 1e30))[0], max=0x7F7FFFFF, subnormal=1,
                  tiny_neg=0x80000001)
    for name, bits in floats.items():
        out.append((f"rope_theta {name} ({f32_bits(bits)!r})", dict(base, theta_bits=bits)))
        out.append((f"norm_eps {name} ({f32_bits(bits)!r})", dict(base, eps_bits=bits)))
    return out


def loader_accepts(path):
    r = subprocess.run(RUNNER + [ML_RUN, "-m", path, "-z", "/dev/null"], capture_output=True, text=True)
    if "truncated:" in r.stderr:
        return True, r.stderr
    return False, r.stderr


def agree(c, label, path, header, py):
    """The header-only file `header` at path: mlb.check_shape(py) and the
    loader accept it, or both refuse it."""
    with open(path, "wb") as f:
        f.write(header)
    try:
        mlb.check_shape(py)
        py_ok, why = True, ""
    except mlb.MlbError as e:
        py_ok, why = False, str(e)
    c_ok, err = loader_accepts(path)
    c.report(py_ok == c_ok, f"agreement: {label}: mlb.py {'accepts' if py_ok else 'refuses'}"
             f"{' (' + why + ')' if why else ''}, the loader "
             f"{'accepts' if c_ok else 'refuses: ' + err.strip().splitlines()[-1][-160:]}")


def main(c):
    # ---- the limits in the C source are mlb.py's ----
    src = open(os.path.join(ROOT, "model", "loader.c")).read()
    for name in ("DIM", "LAYERS", "VOCAB", "SEQ"):
        m = re.search(rf"#define MAX_{name} \(?(\d+)(?: << (\d+))?\)?", src)
        got = None if not m else int(m.group(1)) << int(m.group(2) or 0)
        c.report(got == getattr(mlb, f"MAX_{name}"),
                 f"limits: loader.c MAX_{name} = {got}, mlb.py {getattr(mlb, f'MAX_{name}')}")

    # ---- Python: any value refused with an MlbError ----
    absurd = [("max_seq", 1 << 31), ("max_seq", 1 << 40), ("max_seq", -1), ("max_seq", 1.5),
              ("max_seq", "64"), ("max_seq", None), ("dim", True), ("vocab", 10 ** 30),
              ("n_heads", 0), ("n_kv_heads", 0), ("rope_theta", float("nan")), ("rope_theta", 0.0),
              ("rope_theta", -1.0), ("rope_theta", float("inf")), ("rope_theta", 10 ** 400),
              ("rope_theta", "x"), ("rope_theta", 1.00000001), ("norm_eps", float("nan")),
              ("norm_eps", -1e-6), ("norm_eps", 1e30), ("norm_eps", 1e39), ("norm_eps", None),
              ("wtype", 1 << 40), ("shared_classifier", 2)]
    for k, v in absurd:
        try:
            mlb.check_shape(dict(BASE, **{k: v}))
            c.report(False, f"python: {k} = {v!r}: accepted")
        except mlb.MlbError as e:
            c.report(k in str(e), f"python: {k} = {v!r}: refused, naming it ({e})")
        except Exception as e:  # the bug this test is for
            c.report(False, f"python: {k} = {v!r}: {type(e).__name__}: {e}")

    # ---- Python and C agree on every edge ----
    if not os.access(ML_RUN, os.X_OK):
        c.skip(f"agreement: {ML_RUN} not built")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.mlb")
        for label, h in cases():
            py = dict(h, rope_theta=f32_bits(h["theta_bits"]), norm_eps=f32_bits(h["eps_bits"]))
            agree(c, label, path, header_bytes(h), py)

        # ---- version 2: the same agreement on its fields (model/mlb.h) ----
        v2 = dict(BASE, version=mlb.VERSION_2)
        l3 = dict(rope_scaling=1, rope_factor=8.0, rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                  rope_orig_max_seq=16)
        nan = float("nan")
        for label, edit in (("v2 base", {}), ("v2 stype 1", dict(stype=1)), ("v2 stype 2", dict(stype=2)),
                            ("v2 flags 3", dict(flags=3)), ("v2 flags 4", dict(flags=4)),
                            ("v2 head_dim 32", dict(head_dim=32)), ("v2 head_dim 31", dict(head_dim=31)),
                            ("v2 head_dim 34 (q_dim 136)", dict(head_dim=34)),
                            ("v2 head_dim 30 with n_heads 16 (480)", dict(head_dim=30, n_heads=16, n_kv_heads=2)),
                            ("v2 head_dim 1 << 15", dict(head_dim=1 << 15)),
                            ("v2 llama3", l3), ("v2 llama3 factor 0", dict(l3, rope_factor=0.0)),
                            ("v2 llama3 factor NaN", dict(l3, rope_factor=nan)),
                            ("v2 llama3 low 0", dict(l3, rope_low_freq_factor=0.0)),
                            ("v2 llama3 high = low", dict(l3, rope_high_freq_factor=1.0)),
                            ("v2 llama3 orig 0", dict(l3, rope_orig_max_seq=0)),
                            ("v2 no scaling, factor 8", dict(rope_factor=8.0)),
                            ("v2 rope_scaling 2", dict(rope_scaling=2)),
                            ("v2 bos vocab-1", dict(bos=319)), ("v2 bos vocab", dict(bos=320)),
                            ("v2 eos -2", dict(eos=-2)), ("v2 eot 5", dict(eot=5)),
                            ("v2 add_bos 1 bos 1", dict(add_bos=1, bos=1)), ("v2 add_bos 1 no bos", dict(add_bos=1)),
                            ("v2 add_bos 2", dict(add_bos=2, bos=1))):
            h = dict(v2, **edit)
            agree(c, label, path, mlb.pack_header(h), h)


if __name__ == "__main__":
    checks = Checks()
    checks.run(lambda: main(checks))

#!/usr/bin/env python3
"""tools/mlb.py against the C tensor table (model/mlb.h): for a few headers,
the offset and size of every array that tools/mlb.py writes equal those the
C side lays out (printed by `test_loader --layout`), and a file written by
tools/mlb.py has that size and its arrays at those offsets.

Run from the repo root: python3 tests/test_mlb_layout.py
env BUILD: the build folder holding test_loader (default build/scalar);
RUNNER: its emulator, if any. Skipped when test_loader is missing.
"""
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
import mlb  # noqa: E402
from py_checks import Checks  # noqa: E402

BUILD = os.environ.get("BUILD", "build/scalar")
LOADER = os.path.join(BUILD, "test_loader")

# (what, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq, wtype, shared)
SHAPES = [
    ("Q8_0 untied classifier, GQA, padding gaps", 32, 2, 2, 1, 96, 37, 16, mlb.TYPE_Q8_0, 0),
    ("Q4_0 untied classifier, GQA", 32, 2, 2, 1, 96, 37, 16, mlb.TYPE_Q4_0, 0),
    ("Q8_0 tied classifier, MHA", 64, 3, 4, 4, 160, 100, 8, mlb.TYPE_Q8_0, 1),
    ("Q4_0 tied classifier, GQA 4:1", 128, 1, 8, 2, 352, 61, 8, mlb.TYPE_Q4_0, 1),
]
# version 2: (what, the shape's values, head_dim, flags, tokenizer bytes, template bytes[, stype])
SHAPES_V2 = [
    ("v2 Q8_0 head_dim 32 != dim/n_heads, biases, q/k norms, sections", SHAPES[0][1:], 32, 3, 100, 7),
    ("v2 Q4_0 biases only, tokenizer only", SHAPES[3][1:], 0, 1, 64, 0),
    # and the scale type last: fp16 block scales (stype 1), rows*cols/32 uint16 per X.d
    ("v2 Q8_0 fp16 scales, untied, GQA", SHAPES[0][1:], 0, 0, 0, 0, mlb.STYPE_F16),
    ("v2 Q4_0 fp16 scales, tied, biases, tokenizer", SHAPES[3][1:], 0, 1, 64, 0, mlb.STYPE_F16),
]
FIELDS = ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "vocab", "max_seq",
          "wtype", "shared_classifier")


def c_layout(vals, extra=()):
    """[(array name as tools/mlb.py names it, offset, bytes)], file size."""
    cmd = shlex.split(os.environ.get("RUNNER", "")) + [LOADER, "--layout"] + [str(v) for v in list(vals) + list(extra)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    arrays, end = [], None
    for line in out.splitlines():
        f = line.split()
        if f[0] == "end":
            end = int(f[1])
            continue
        name, layer, part, off, n = f[0], int(f[1]), f[2], int(f[3]), int(f[4])
        prefix = f"layers.{layer}." if layer >= 0 else ""
        suffix = {"q": ".q", "d": ".d", "f": ""}[part]
        arrays.append((prefix + name + suffix, off, n))
    return arrays, end


ck = Checks()


def expected_arrays(h, tensors):
    """{array name: its bytes} of these float tensors, quantized by tools/mlb.py."""
    out = {}
    for name, x in tensors:
        if x.ndim == 1:
            out[name] = x.astype("<f4").tobytes()
        else:
            q, d = mlb.quantize(h["wtype"], x, mlb.v2(h, "stype") == mlb.STYPE_F16)
            out[name + ".q"], out[name + ".d"] = q.tobytes(), d.astype(mlb.scale_dtype(h)).tobytes()
    return out


def main():
    if not os.access(LOADER, os.X_OK):
        ck.skip(f"the .mlb layout of tools/mlb.py against C: no {LOADER} (build it first)")
        return
    shapes = [(what, vals, None) for what, *vals in SHAPES] + [(w, v, x) for w, v, *x in SHAPES_V2]
    for what, vals, extra in shapes:
        h = dict(zip(FIELDS, vals), rope_theta=10000.0, norm_eps=1e-5)
        if extra:
            h.update(version=mlb.VERSION_2, head_dim=extra[0], flags=extra[1])
            if len(extra) > 4:
                h.update(stype=extra[4])
        c_arrays, c_end = c_layout(vals, (extra[:2] + extra[4:]) if extra else ())
        if extra:  # C's walk covers the arrays; the sections follow them as mlb.sections() says
            end = c_end
            for name, n in (("tokenizer", extra[2]), ("chat_template", extra[3])):
                h[name] = bytes((i % 200) + 1 for i in range(n))
                if n:
                    off = (end + 63) // 64 * 64
                    c_arrays.append((name, off, n))
                    end = c_end = off + n
        py_arrays, py_end = mlb.layout(h)
        ck.report(c_end == py_end, f"{what}: file size, C {c_end}, tools/mlb.py {py_end}")
        diff = [(c, p) for c, p in zip(c_arrays, py_arrays) if c != p]
        ck.report(len(c_arrays) == len(py_arrays) and not diff,
                  f"{what}: {len(c_arrays)} arrays (name, offset, bytes) the same in C and tools/mlb.py"
                  + (f"; first difference C {diff[0][0]} vs {diff[0][1]}" if diff else "")
                  + ("" if len(c_arrays) == len(py_arrays) else
                     f"; C has {len(c_arrays)}, tools/mlb.py {len(py_arrays)}"))
        # What write_mlb puts on disk, byte for byte: the header, each array
        # at C's offset, zeros between.
        rng = np.random.default_rng(1)
        tensors = [(n, rng.uniform(-1, 1, s).astype(np.float32)) for n, s in mlb.tensor_plan(h)]
        want = bytearray(c_end)
        want[:mlb.HEADER_BYTES] = mlb.pack_header(h)
        arrays = expected_arrays(h, tensors)
        arrays.update(tokenizer=h.get("tokenizer", b""), chat_template=h.get("chat_template", b""))
        for name, off, n in c_arrays:
            b = arrays.get(name, b"")
            want[off:off + n] = b if len(b) == n else bytes(n) + b"size mismatch"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.mlb")
            mlb.write_mlb(path, h, tensors)
            with open(path, "rb") as f:
                raw = f.read()
        ck.report(raw == bytes(want),
                  f"{what}: tools/mlb.py write_mlb's file is C's layout of its arrays ({len(raw)} bytes,"
                  f" C {c_end})")


if __name__ == "__main__":
    ck.run(main)

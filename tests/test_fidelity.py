#!/usr/bin/env python3
"""Numerical fidelity of the quantized runtime against an independent float
reference (tests/ref_forward.py, numpy float32, reading the original llama2.c
checkpoint). Teacher forcing: ml_run reads the stories260K story as its
prompt and continues it greedily to the end of the context; the reference is
fed the same token ids. Per position we compare the logits:
  top-1 agreement, mean KL(reference || runtime), max |delta logit|.
Thresholds sit a margin below/above the figures measured when this test was
written (README "Numerical fidelity").
env: BUILD (folder with ml_run), MODELS, PYTHON, RUNNER."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_forward  # noqa: E402
from py_checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build/scalar")
MODELS = os.environ.get("MODELS", "../shared/models")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
PYTHON = sys.executable

# wtype: (min top-1 agreement, max mean KL, max |delta logit|)
LIMITS = {"q8_0": (0.95, 0.005, 1.5), "q4_0": (0.75, 0.2, 15.0)}

checks = Checks()
report = checks.report


def story_text(provenance):
    """The greedy story of the 'Verified output' section (llama2.c run.c)."""
    text = open(provenance, encoding="utf-8").read()
    m = re.search(r"## Verified output.*?```\n(.*?)```", text, re.S)
    return m.group(1).strip().splitlines()[0]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    s260 = os.path.join(MODELS, "stories260K")
    ckpt, tok = os.path.join(s260, "stories260K.bin"), os.path.join(s260, "tok512.bin")
    if not os.path.exists(ckpt):
        checks.skip(f"fidelity: {ckpt} not found")
        return
    prompt = story_text(os.path.join(s260, "PROVENANCE.md"))
    vocab = 512
    with tempfile.TemporaryDirectory() as tmp:
        for wtype, (min_top1, max_kl, max_dlogit) in LIMITS.items():
            mlb = os.path.join(tmp, f"s260_{wtype}.mlb")
            subprocess.run([PYTHON, os.path.join(ROOT, "tools/convert.py"), ckpt, mlb, "--wtype", wtype],
                           check=True, capture_output=True)
            logits_f, ids_f = os.path.join(tmp, "l.f32"), os.path.join(tmp, "ids.txt")
            run = subprocess.run(RUNNER + [os.path.join(ROOT, BUILD, "ml_run"), "-m", mlb, "-z", tok,
                                           "-i", prompt, "-n", "0", "--temp", "0",
                                           "--logits", logits_f, "--ids", ids_f],
                                 capture_output=True)
            report(run.returncode == 0, f"{wtype}: ml_run teacher-forced run (exit {run.returncode})")
            if run.returncode:
                print(run.stderr.decode(errors="replace"))
                continue
            got = np.fromfile(logits_f, dtype="<f4").reshape(-1, vocab)
            ids = [int(x) for x in open(ids_f).read().split()][: got.shape[0]]
            ref = ref_forward.forward_logits(ckpt, ids)
            top1 = float((got.argmax(1) == ref.argmax(1)).mean())
            p, q = softmax(ref.astype(np.float64)), softmax(got.astype(np.float64))
            kl = float((p * (np.log(p) - np.log(q))).sum(1).mean())
            dlogit = float(np.abs(got - ref).max())
            figures = f"{len(ids)} positions: top-1 {top1:.2%}, mean KL {kl:.2e}, max |dlogit| {dlogit:.3f}"
            print(f"# {wtype} {figures}")
            report(top1 >= min_top1, f"{wtype}: top-1 agreement {top1:.2%} >= {min_top1:.0%}")
            report(kl <= max_kl, f"{wtype}: mean KL {kl:.2e} <= {max_kl}")
            report(dlogit <= max_dlogit, f"{wtype}: max |dlogit| {dlogit:.3f} <= {max_dlogit}")


if __name__ == "__main__":
    checks.run(main)

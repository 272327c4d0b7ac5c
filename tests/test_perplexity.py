#!/usr/bin/env python3
"""ml_perplexity against an independent float reference: the PPL the C
program prints for the shipped stories260K (Q8_0) on tests/data/ppl_story.txt
must be within 1% of the PPL numpy computes with tests/ref_forward.py from the
ORIGINAL fp32 checkpoint, with the same chunking (llama-perplexity's: chunks
of -c tokens starting with BOS, the second half scored). The token ids come
from tests/tokenizer_ref.py's llama2.c-style encoder, not from the C code.
env: BUILD (folder with ml_perplexity), MODELS, RUNNER."""
import os
import re
import shlex
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_forward  # noqa: E402
from py_checks import Checks  # noqa: E402
import tokenizer_ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build/scalar")
MODELS = os.environ.get("MODELS", "../shared/models")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
CTX = 128
TOLERANCE = 0.01

checks = Checks()
report = checks.report


def reference_ppl(ckpt, ids, ctx):
    """exp(mean NLL) over the second half of each full chunk of ctx tokens."""
    cfg, w = ref_forward.load_legacy(ckpt)
    first, nll = ctx // 2, []
    for c in range(len(ids) // ctx):
        chunk = [ref_forward.BOS] + ids[c * ctx + 1:(c + 1) * ctx]
        logits = ref_forward.forward(cfg, w, chunk[:-1]).astype(np.float64)
        for pos in range(first, ctx - 1):
            row = logits[pos]
            lse = row.max() + np.log(np.exp(row - row.max()).sum())
            nll.append(lse - row[chunk[pos + 1]])
    return float(np.exp(np.mean(nll))), len(nll)


def main():
    ckpt = os.path.join(MODELS, "stories260K", "stories260K.bin")
    if not os.path.exists(ckpt):
        checks.skip(f"perplexity vs numpy: {ckpt} not found")
        return
    model = os.path.join(ROOT, "models/stories260K/stories260K_q8_0.mlb")
    tok = os.path.join(ROOT, "models/stories260K/tok512.bin")
    text = os.path.join(ROOT, "tests/data/ppl_story.txt")
    run = subprocess.run(RUNNER + [os.path.join(ROOT, BUILD, "ml_perplexity"), "-m", model, "-z", tok,
                                   "-f", text, "-c", str(CTX)], capture_output=True, text=True)
    report(run.returncode == 0, f"ml_perplexity -c {CTX} runs (exit {run.returncode})")
    if run.returncode:
        print(run.stderr)
        return
    got = re.search(r"^PPL = ([0-9.]+) \+/- [0-9.]+ \((\d+) scored tokens", run.stdout, re.M)
    n_tok = re.search(r"^text: .*: (\d+) tokens", run.stdout, re.M)
    ids = tokenizer_ref.BinBpe(tok).encode(open(text, encoding="utf-8").read())
    report(n_tok and int(n_tok.group(1)) == len(ids),
           f"the C tokenizer and tokenizer_ref.py agree on the token count ({len(ids)})")
    ref, n_ref = reference_ppl(ckpt, ids, CTX)
    c_ppl, n_c = float(got.group(1)), int(got.group(2))
    report(n_c == n_ref, f"both score {n_ref} tokens")
    rel = abs(c_ppl / ref - 1)
    report(rel <= TOLERANCE, f"PPL {c_ppl:.4f} (Q8_0, C) vs {ref:.4f} (fp32 numpy reference): "
                             f"{rel:.3%} apart, within {TOLERANCE:.0%}")


if __name__ == "__main__":
    checks.run(main)

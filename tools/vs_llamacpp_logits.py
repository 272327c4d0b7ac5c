#!/usr/bin/env python3
"""An outside reference for the model families (issue 20, section 5):
llama.cpp's logits against ours on the same Q8_0 GGUF, teacher-forced on the
same ids. A measurement for the notes, not a CI test.

For each architecture, a random-weight GGUF at tools/gguf_random.py's tiny
shape (seed fixed; Q8_0 blocks from the gguf package, which llama.cpp reads
as they are) is converted losslessly (tools/convert.py), ml_run generates
from a prompt with its embedded tokenizer (--temp 0, --ids, --logits), and
../shared/tools/lllogits (built against llama.cpp, see its README) computes
llama.cpp's logits for the same ids in one batch. Printed per architecture:
top-1 agreement over the positions, the same where our top two are at least
0.1 apart, and the largest |difference| relative to the logits' range.

    tools/vs_llamacpp_logits.py --lllogits build/lllogits [--ml-run build/avx2/ml_run]
        [--arch llama-spm llama3 smollm2 qwen2 qwen3] [-n 128] [--keep DIR]

Architectures: llama-spm (Llama with a SentencePiece vocabulary, llama2.c's
kind), llama3 (Llama 3: rope_freqs, llama-bpe BPE), smollm2 (Llama, smollm
BPE), qwen2 (biases, NeoX rotation, qwen2 BPE), qwen3 (q/k norms; llama.cpp
sources older than Qwen3 refuse the file: reported, not a failure).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gguf_random  # noqa: E402

# name: (gguf_random family, SentencePiece vocabulary)
ARCHS = {"llama-spm": ("llama", True), "llama3": ("llama3", False), "smollm2": ("llama", False),
         "qwen2": ("qwen2", False), "qwen3": ("qwen3", False)}
PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside the sea"
MARGIN = 0.1


def run(args, what):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, errors="replace")
    if r.returncode:
        raise RuntimeError(f"{what} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-400:]}")
    return r


def compare(arch, a, tmp):
    fam, spm = ARCHS[arch]
    gg, mlbf = os.path.join(tmp, arch + ".gguf"), os.path.join(tmp, arch + ".mlb")
    h = gguf_random.write_family(gg, fam, seed=a.seed, qtype="q8_0", spm=spm)
    run([sys.executable, os.path.join(HERE, "convert.py"), gg, mlbf, "--wtype", "q8_0"], f"{arch}: convert")
    idf, ours_f, theirs_f = (os.path.join(tmp, arch + x) for x in (".ids", ".ours.f32", ".theirs.f32"))
    run([a.ml_run, "-m", mlbf, "-i", PROMPT, "-n", a.n, "--temp", "0", "-t", "1",
         "--ids", idf, "--logits", ours_f], f"{arch}: ml_run")
    ids = open(idf).read().split()
    r = subprocess.run([a.lllogits, gg, idf, theirs_f, "1"], capture_output=True, text=True, errors="replace")
    if r.returncode:
        return dict(arch=arch, error=f"llama.cpp refused it: {r.stderr.strip()[-200:]}")
    v = h["vocab"]
    ours = np.fromfile(ours_f, "<f4").reshape(-1, v)
    theirs = np.fromfile(theirs_f, "<f4").reshape(-1, v)
    n = min(len(ids) - 1, len(ours))
    ours, theirs = ours[:n], theirs[:n]
    agree = ours.argmax(1) == theirs.argmax(1)
    srt = np.sort(ours, axis=1)
    clear = srt[:, -1] - srt[:, -2] >= MARGIN
    spread = float(ours.max() - ours.min())
    rel = float(np.abs(ours - theirs).max()) / spread
    return dict(arch=arch, n=n, top1=agree.mean(), n_clear=int(clear.sum()),
                top1_clear=agree[clear].mean() if clear.any() else float("nan"), rel=rel)


def main(argv=None):
    ap = argparse.ArgumentParser(description="llama.cpp's logits against ours, teacher-forced (top-1 agreement)")
    ap.add_argument("--lllogits", required=True, help="the lllogits program (../shared/tools/lllogits/README.md)")
    ap.add_argument("--ml-run", default=os.path.join(ROOT, "build", "avx2", "ml_run"))
    ap.add_argument("--arch", nargs="+", default=list(ARCHS), choices=list(ARCHS))
    ap.add_argument("-n", type=int, default=128, help="positions (prompt and generated; at most 128)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", help="keep the files in this folder")
    a = ap.parse_args(argv)
    for p in (a.lllogits, a.ml_run):
        if not os.access(p, os.X_OK):
            print(f"vs_llamacpp_logits: {p}: not an executable", file=sys.stderr)
            return 1
    tmp_obj = None
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        tmp = a.keep
    else:
        tmp_obj = tempfile.TemporaryDirectory()
        tmp = tmp_obj.name
    print(f"| architecture | vocabulary | positions | top-1 agreement | top-1 where our margin >= {MARGIN} "
          "| max |diff| / logit range |")
    print("| --- | --- | --- | --- | --- | --- |")
    bad = 0
    for arch in a.arch:
        try:
            r = compare(arch, a, tmp)
        except RuntimeError as e:
            print(f"| {arch} | | | error: {e} | | |")
            bad = 1
            continue
        fam, spm = ARCHS[arch]
        voc = "SentencePiece" if spm else f"BPE {gguf_random.VOCABS[fam]['pre']}"
        if "error" in r:
            print(f"| {arch} | {voc} | | {r['error']} | | |")
            continue
        print(f"| {arch} | {voc} | {r['n']} | {100 * r['top1']:.1f}% | {100 * r['top1_clear']:.1f}% "
              f"({r['n_clear']} positions) | {r['rel']:.4f} |")
    if tmp_obj:
        tmp_obj.cleanup()
    return bad


if __name__ == "__main__":
    sys.exit(main())

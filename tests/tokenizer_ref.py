#!/usr/bin/env python3
"""Independent reference for tests/test_tokenizer.c: expected token ids.

It reads the Hugging Face tokenizer.json files (not the llama2.c tokenizer.bin
the C code reads) and encodes with HF's BPE rules for Llama: normalizer
Prepend("\u2581") + Replace(" " -> "\u2581"), no pre-tokenizer, characters as
initial symbols, a character missing from the vocab falls back to its UTF-8
bytes as <0xNN> pieces, then repeatedly merge the adjacent pair with the
lowest rank in the "merges" list (leftmost on ties), <s> (id 1) in front.

    python3 tests/tokenizer_ref.py [MODELS]       # prints the C arrays to paste
    python3 tests/tokenizer_ref.py --check [MODELS]

--check also runs a second, llama2.c-style encoder (scores from tokenizer.bin,
highest score merged first) over the same strings and reports any string on
which the two disagree. Standard library only.
"""
import json
import os
import struct
import sys

SPACE = "\u2581"  # SentencePiece's visible space

# The strings of the test, in order. Keep in sync with CASES in test_tokenizer.c.
CASES = [
    "Once upon a time",
    "Hello, world! It's 2024: 3.14 + 42 = 45.14?",
    "caf\u00e9 \u4e2d\u6587 \U0001F600",
    "two  spaces and   three",
    " leading space",
    "Lily said, \"Let's play!\"\nThe end.",
    "    if x:\n        return   y\t# five     spaces",
]

TOKENIZERS = [  # (name in the C test, tokenizer.json, tokenizer.bin), relative to MODELS
    ("tok512", "stories260K-hf/tokenizer.json", "stories260K/tok512.bin"),
    ("llama2", "llama2-tokenizer/tokenizer.json", "llama2-tokenizer/tokenizer.bin"),
]


# ---- HF tokenizer.json BPE ------------------------------------------------
class HfBpe:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        m = j["model"]
        assert m["type"] == "BPE" and m["byte_fallback"], "expects a byte-fallback BPE"
        self.vocab = m["vocab"]
        self.ranks = {}
        for r, mg in enumerate(m["merges"]):
            a, b = mg.split(" ") if isinstance(mg, str) else mg
            self.ranks.setdefault((a, b), r)

    def encode(self, text):
        ids = [1]
        if not text:
            return ids
        norm = SPACE + text.replace(" ", SPACE)
        syms = []
        for ch in norm:
            if ch in self.vocab:
                syms.append(ch)
            else:
                syms += ["<0x%02X>" % b for b in ch.encode("utf-8")]
        while True:
            best = None
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        return ids + [self.vocab[s] for s in syms]


# ---- llama2.c-style encoder over tokenizer.bin (only for --check) ----------
class BinBpe:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        pos, self.pieces, self.scores = 4, [], []
        while pos < len(data):
            score, n = struct.unpack_from("<fI", data, pos)
            self.pieces.append(data[pos + 8:pos + 8 + n])
            self.scores.append(score)
            pos += 8 + n
        self.ids = {}
        for i, p in enumerate(self.pieces):
            self.ids.setdefault(p, i)

    def encode(self, text):
        ids = [1]
        if not text:
            return ids
        for ch in " " + text:
            b = ch.encode("utf-8")
            if b in self.ids:
                ids.append(self.ids[b])
            else:
                ids += [self.ids.get(b"<0x%02X>" % c, 0) for c in b]
        while True:
            best = None
            for i in range(1, len(ids) - 1):
                j = self.ids.get(self.pieces[ids[i]] + self.pieces[ids[i + 1]])
                if j is not None and (best is None or self.scores[j] > best[0]):
                    best = (self.scores[j], i, j)
            if best is None:
                break
            _, i, j = best
            ids[i:i + 2] = [j]
        return ids


def c_string(s):
    out = []
    for b in s.encode("utf-8"):
        if b == 0x22 or b == 0x5C:
            out.append("\\" + chr(b))
        elif b == 0x0A:
            out.append("\\n")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\%03o" % b)  # octal escapes stop after 3 digits; \x ones do not
    return '"' + "".join(out) + '"'


def main(argv):
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    models = rest[0] if rest else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "models")
    bad = 0
    for name, js, binf in TOKENIZERS:
        hf = HfBpe(os.path.join(models, js))
        bb = BinBpe(os.path.join(models, binf)) if check else None
        print("/* %s: %s */" % (name, js))
        for s in CASES:
            ids = hf.encode(s)
            print("    {%s, {%s}}," % (c_string(s), ", ".join(map(str, ids))))
            if bb is not None and bb.encode(s) != ids:
                bad += 1
                print("  MISMATCH llama2.c-style %s" % bb.encode(s), file=sys.stderr)
    if check:
        print("check: %s" % ("all strings agree" if not bad else "%d mismatches" % bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""model/nfc against Python's unicodedata.normalize("NFC", ...):
  - model/nfc_tables.c is what tools/gen_unicode.py --nfc makes (when this
    Python's Unicode is the version the file names);
  - every code point, alone and after a letter many marks compose with;
  - 20000 seeded random sequences of the characters NFC is about: marks of
    many classes, letters they compose with, singletons, exclusions, Hangul
    jamo and syllables, starters that compose.
Each set is one text, the pieces joined by a newline (a starter that
composes with nothing), normalized by `test_nfc --filter` of BUILD; what
`test_nfc --quick` passes (the quick check) must be its own NFC.
Run from the repo root: python3 tests/test_nfc_ref.py.
"""
import os
import random
import shlex
import subprocess
import sys
import tempfile
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from py_checks import Checks  # noqa: E402

BUILD = os.environ.get("BUILD", "build/scalar")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
checks = Checks()


def tables_version():
    with open(os.path.join(ROOT, "model", "nfc_tables.c"), encoding="utf-8") as f:
        return f.readline().split("Unicode ")[1].split()[0]


def ours(text, tmp, mode="--filter"):
    src, dst = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
    with open(src, "wb") as f:
        f.write(text.encode("utf-8", "surrogatepass"))
    r = subprocess.run(RUNNER + [os.path.join(BUILD, "test_nfc"), mode, src, dst], capture_output=True)
    if r.returncode:
        raise RuntimeError(f"test_nfc --filter failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    with open(dst, "rb") as f:
        return f.read().decode("utf-8")


def compare(what, pieces, tmp):
    got = ours("\n".join(pieces), tmp).split("\n")
    want = [unicodedata.normalize("NFC", p) for p in pieces]
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    first = bad[0] if bad else 0
    checks.report(len(got) == len(want) and not bad,
                  f"{what}: {len(pieces)} texts, {len(bad)} differ" +
                  (f"; first {pieces[first]!r}: ours {got[first]!r}, Python {want[first]!r}" if bad else ""))
    quick = ours("\n".join(pieces), tmp, "--quick").split("\n")[:-1]
    wrong = [p for p, q in zip(pieces, quick) if q == "1" and unicodedata.normalize("NFC", p) != p]
    checks.report(len(quick) == len(pieces) and not wrong,
                  f"{what}: the quick check passes {quick.count('1')}, each its own NFC" +
                  (f"; not {wrong[0]!r}" if wrong else ""))


def interesting():
    """Code points NFC treats specially (sampled by class)."""
    marks = [cp for cp in range(0x300, 0x2000) if unicodedata.combining(chr(cp))]
    marks += [cp for cp in range(0x1D165, 0x1D1AE) if unicodedata.combining(chr(cp))]
    decomposable = [cp for cp in range(0xC0, 0x30000) if not 0xAC00 <= cp <= 0xD7A3 and
                    unicodedata.decomposition(chr(cp)) and not unicodedata.decomposition(chr(cp)).startswith("<")]
    bases = sorted({int(unicodedata.decomposition(chr(cp)).split()[0], 16) for cp in decomposable})
    jamo = list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A7, 0x11C3))
    syllables = [0xAC00, 0xAC01, 0xAC1C, 0xD7A3, 0xB098, 0xCE7B]
    return marks, decomposable, bases, jamo + syllables + [0x0B3E, 0x0B47, 0x0CC2, 0x0CC6, 0x0DCF, 0x0DD9,
                                                          0x102E, 0x1025, 0x110A5, 0x110B9, 0x110BA]


def main():
    version = tables_version()
    if version != unicodedata.unidata_version:
        checks.skip(f"model/nfc_tables.c is Unicode {version}, this Python's {unicodedata.unidata_version}: "
                    f"not compared")
        return
    path = os.path.join(ROOT, "model", "nfc_tables.c")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_unicode.py"), "--nfc", "--check", path],
                       capture_output=True, text=True)
    checks.report(r.returncode == 0, f"{path} is as tools/gen_unicode.py --nfc makes it"
                                     f"{': ' + r.stderr.strip() if r.returncode else ''}")
    if not os.path.exists(os.path.join(BUILD, "test_nfc")):
        checks.report(False, f"{BUILD}/test_nfc is missing (make first)")
        return
    every = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000 and cp != 0x0A]
    with tempfile.TemporaryDirectory(prefix="ml_nfc_") as tmp:
        compare("every code point alone", every, tmp)
        compare("every code point after 'a'", ["a" + c for c in every], tmp)
        marks, decomposable, bases, others = interesting()
        rng = random.Random(15)
        pools = [marks, marks, decomposable, bases, others, [ord("a"), ord("e"), ord("A"), 0x3B1]]
        seqs = ["".join(chr(rng.choice(rng.choice(pools))) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
        compare("20000 random sequences of marks, bases, composites, jamo", seqs, tmp)
        nfd = [unicodedata.normalize("NFD", s) for s in seqs]
        compare("the same in NFD", nfd, tmp)


if __name__ == "__main__":
    checks.run(main)

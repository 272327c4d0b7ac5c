#!/usr/bin/env python3
"""The byte-level BPE tokenizer (model/bpe.c, through ml_tokenize) against the
reference tokenizers, on a 1 MiB seeded corpus (tests/bpe_corpus.py), for
each pre-tokenizer (gpt-2, llama-bpe, qwen2; smollm with tokenizers only);
first, that model/unicode_tables.c is tools/gen_unicode.py's output:
  - tiktoken with GPT-2's 50257-token vocabulary (gpt2.tiktoken from the
    openai-whisper 20250625 sdist) and the family's split pattern; our file
    from tools/tokfile.py's bpe_from_tiktoken; plain text and --special;
  - Hugging Face tokenizers (when importable) with a tokenizer.json built
    here from the same vocabulary (merges recovered from the ranks); our file
    from that tokenizer.json through bpe_from_hf (merges ranked by position);
  - decode: the ids' bytes give the corpus back;
  - GGUF: the same vocabulary as tokenizer.ggml.* (gguf's writer) read by
    bpe_from_gguf gives the tokenizer.json's file;
  - ml_run with a BPE file prints the prompt back whole (UTF-8 stream);
  - speed: encoding the corpus, ours (ml_tokenize --time) and tiktoken's
    encode_ordinary, one thread each, once (ML_BPE_SPEED_REPS=N: medians of N,
    alternating; reported, not asserted).
The vocabulary is fetched into $ML_CACHE (default ~/.cache/legacy-ml) with
pip download; without it (no network) or without tiktoken the test SKIPS,
loudly. Run from the repo root: python3 tests/test_bpe_corpus.py (BUILD:
the build folder with ml_tokenize; PYTHON for tools/gen_random.py).
"""
import base64
import glob
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tools"))
import bpe_corpus  # noqa: E402
import tokfile  # noqa: E402
from py_checks import Checks  # noqa: E402

BUILD = os.environ.get("BUILD", "build/scalar")
RUNNER = shlex.split(os.environ.get("RUNNER", ""))
CACHE = os.environ.get("ML_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "legacy-ml"))
WHISPER = "openai-whisper==20250625"
VOCAB = os.path.join(CACHE, "gpt2.tiktoken")
EOT = "<|endoftext|>"
# Hugging Face's ignore_merges of each family (Llama 3's tokenizer.json sets it).
HF_IGNORE_MERGES = {"gpt-2": False, "llama-bpe": True, "qwen2": False, "smollm": False}
# ML_BPE_SPEED_REPS=5: time each encoder 5 times, alternating, and report medians.
SPEED_REPS = max(1, int(os.environ.get("ML_BPE_SPEED_REPS", "1")))
checks = Checks()


def fetch_vocab():
    """gpt2.tiktoken from the whisper sdist into the cache; None if it cannot be had."""
    if os.path.exists(VOCAB):
        return VOCAB
    os.makedirs(CACHE, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            WHISPER, "-d", d], capture_output=True, text=True)
        sdists = glob.glob(os.path.join(d, "openai_whisper-*.tar.gz"))
        if r.returncode or not sdists:
            print(f"pip download {WHISPER} failed: {r.stderr.strip()[-300:]}")
            return None
        with tarfile.open(sdists[0]) as tf:
            member = next((m for m in tf.getmembers() if m.name.endswith("whisper/assets/gpt2.tiktoken")), None)
            if member is None:
                print(f"{sdists[0]} has no whisper/assets/gpt2.tiktoken")
                return None
            data = tf.extractfile(member).read()
    with open(VOCAB + ".tmp", "wb") as f:
        f.write(data)
    os.replace(VOCAB + ".tmp", VOCAB)
    return VOCAB


def read_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def recover_merges(ranks):
    """The merge list a rank table implies: each token's bytes merged, by rank,
    with the tokens ranked below it only, end as two parts (its merge)."""
    merges = []
    for tok, rank in sorted(ranks.items(), key=lambda x: x[1]):
        if len(tok) < 2:
            continue
        parts = [bytes([b]) for b in tok]
        while len(parts) > 2:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return merges


def cached_merges(ranks):
    """recover_merges(ranks), kept in the cache beside the vocabulary."""
    path = VOCAB + ".merges"
    if os.path.exists(path):
        with open(path, "rb") as f:
            return [tuple(base64.b64decode(x) for x in line.split()) for line in f]
    merges = recover_merges(ranks)
    with open(path + ".tmp", "wb") as f:
        f.write(b"".join(base64.b64encode(a) + b" " + base64.b64encode(b) + b"\n" for a, b in merges))
    os.replace(path + ".tmp", path)
    return merges


def hf_tokenizer_json(ranks, merges, pre):
    m = tokfile.byte_to_unicode()
    show = lambda b: "".join(m[x] for x in b)  # noqa: E731
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    if pre == "gpt-2":  # ByteLevel's own regex: bpe_from_hf must see it as gpt-2
        pt = byte_level
    elif pre == "smollm":  # SmolLM2's: each digit alone, then ByteLevel's regex
        pt = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level]}
    else:
        pt = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": tokfile.PATTERNS[pre]}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": len(ranks), "content": EOT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": pt, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": HF_IGNORE_MERGES[pre],
                  "vocab": {show(t): r for t, r in ranks.items()},
                  "merges": [show(a) + " " + show(b) for a, b in merges]},
    }


def ours(tok_path, model, corpus_path, *flags):
    """Our ids for the corpus (ml_tokenize --ids), and the --time line."""
    r = subprocess.run(RUNNER + [os.path.join(BUILD, "ml_tokenize"), "-m", model, "-z", tok_path, "-f", corpus_path,
                                 "--ids", "--time", *flags], capture_output=True)
    if r.returncode:
        raise RuntimeError(f"ml_tokenize failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return [int(x) for x in r.stdout.split()], r.stderr.decode().strip()


def compare(what, got, want, decode):
    if got == want:
        checks.report(True, f"{what}: {len(want)} ids identical")
        return
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    checks.report(False, f"{what}: {len(got)} ids vs {len(want)}, first difference at id {i}: "
                         f"ours {got[max(0, i - 3):i + 3]} {decode(got[max(0, i - 3):i + 3])!r}, "
                         f"reference {want[max(0, i - 3):i + 3]} {decode(want[max(0, i - 3):i + 3])!r}")


def gguf_check(tf_hf, pre, tmp):
    """The vocabulary's first 4096 tokens (and the merges among them) as a
    GGUF's tokenizer.ggml.* metadata, read back by bpe_from_gguf (the gguf
    package reads 50k strings slowly)."""
    try:
        import gguf
    except ImportError as e:
        checks.skip(f"gguf is not installed ({e}): bpe_from_gguf unchecked")
        return
    n = 4096
    tf_hf = tokfile.TokFile(pre, tf_hf.tokens[:n - 1] + [b"<|im_end|>"], tf_hf.types[:n - 1] + [tokfile.TYPE_CONTROL],
                            [m for m in tf_hf.merges if max(m) < n - 1], tf_hf.flags)
    m = tokfile.byte_to_unicode()
    names = [t.decode() if ty != tokfile.TYPE_NORMAL else "".join(m[x] for x in t)
             for t, ty in zip(tf_hf.tokens, tf_hf.types)]
    merges = ["".join(m[x] for x in tf_hf.tokens[a]) + " " + "".join(m[x] for x in tf_hf.tokens[b])
              for a, b, _ in tf_hf.merges]
    path = os.path.join(tmp, f"{pre}.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(names)
    w.add_token_types(tf_hf.types)
    w.add_token_merges(merges)
    w.add_eos_token_id(len(names) - 1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    tf = tokfile.bpe_from_gguf(gguf.GGUFReader(path))
    checks.report(tf.pre == pre and tf.tokens == tf_hf.tokens and tf.types == tf_hf.types and
                  tf.merges == tf_hf.merges and tf.flags == tf_hf.flags and tf.eos == n - 1 and tf.eot == n - 1,
                  f"{pre}: bpe_from_gguf reads the same vocabulary from GGUF metadata (flags {tf.flags})")


def nfc_check(tj, text, model, tmp, tokenizers, decode):
    """Qwen2's normalizer (NFC) on the corpus written decomposed (NFD): the
    ids Hugging Face gives; any other normalizer is refused by bpe_from_hf."""
    import unicodedata
    folder = os.path.join(tmp, "hf-qwen2-nfc")
    os.makedirs(folder)
    for norm in ({"type": "NFKC"}, {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}):
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(dict(tj, normalizer=norm), f)
        try:
            tokfile.bpe_from_hf(folder)
            checks.report(False, f"bpe_from_hf refuses the normalizer {norm}")
        except tokfile.TokFileError as e:
            checks.report("normalizer" in str(e), f"bpe_from_hf refuses the normalizer {norm}: {e}")
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(dict(tj, normalizer={"type": "NFC"}), f)
    tf = tokfile.bpe_from_hf(folder)
    checks.report(tf.flags & tokfile.NFC, "qwen2: bpe_from_hf reads the NFC normalizer into the flags")
    path = os.path.join(tmp, "qwen2-nfc.hf.bpe")
    with open(path, "wb") as f:
        f.write(tf.to_bytes())
    nfd = unicodedata.normalize("NFD", text)
    nfd_path = os.path.join(tmp, "corpus-nfd.txt")
    with open(nfd_path, "w", encoding="utf-8", newline="") as f:
        f.write(nfd)
    hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    got, _ = ours(path, model, nfd_path, "--special")
    compare(f"qwen2 + NFC: Hugging Face tokenizers on the corpus in NFD ({len(nfd.encode())} bytes)", got,
            hf.encode(nfd, add_special_tokens=False).ids, decode)


def run_check(path, model):
    """ml_run with a BPE file: the prompt comes back whole, a character split
    across tokens included (GPT-2's vocabulary cuts 你 and the emoji)."""
    prompt = "Hello 你好🎉 it's"
    r = subprocess.run(RUNNER + [os.path.join(BUILD, "ml_run"), "-m", model, "-z", path, "-i", prompt, "-n", "12",
                                 "--temp", "0"], capture_output=True)
    checks.report(r.returncode == 0 and r.stdout.startswith(prompt.encode()),
                  f"ml_run -z {os.path.basename(path)} prints the prompt back whole "
                  f"(exit {r.returncode}, {r.stdout[:40]!r})")


def unicode_tables_check():
    """model/unicode_tables.c is what tools/gen_unicode.py makes, when this
    Python's Unicode is the version the file names."""
    import unicodedata
    path = os.path.join(ROOT, "model", "unicode_tables.c")
    with open(path, encoding="utf-8") as f:
        head = f.readline()
    if f"Unicode {unicodedata.unidata_version} " not in head:
        checks.skip(f"{path} is of another Unicode than this Python's {unicodedata.unidata_version}: not regenerated")
        return
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_unicode.py"), "--check", path],
                       capture_output=True, text=True)
    checks.report(r.returncode == 0, f"{path} is as tools/gen_unicode.py makes it{': ' + r.stderr.strip() if r.returncode else ''}")


def main():
    unicode_tables_check()
    try:
        import tiktoken
    except ImportError as e:
        checks.skip(f"tiktoken is not installed ({e}); .ci/run installs it: every corpus check skipped")
        return
    vocab = fetch_vocab()
    if not vocab:
        checks.skip(f"no GPT-2 vocabulary (pip download {WHISPER} failed: no network?): every corpus check skipped")
        return
    if not os.path.exists(os.path.join(BUILD, "ml_tokenize")):
        checks.report(False, f"{BUILD}/ml_tokenize is missing (make first)")
        return
    try:
        import tokenizers
    except ImportError as e:
        tokenizers = None
        checks.skip(f"Hugging Face tokenizers is not installed ({e}): its checks skipped")
    ranks = read_ranks(vocab)
    text = bpe_corpus.corpus()
    # everything the checks write goes in here and is removed after, whatever fails
    with tempfile.TemporaryDirectory(prefix="ml_bpe_") as tmp:
        corpus_path = os.path.join(tmp, "corpus.txt")
        with open(corpus_path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        model = os.path.join(tmp, "v50257.mlb")
        subprocess.run([os.environ.get("PYTHON", sys.executable), os.path.join(ROOT, "tools", "gen_random.py"), model,
                        "--dim", "32", "--n-layers", "1", "--n-heads", "2", "--n-kv-heads", "1", "--hidden-dim", "32",
                        "--vocab", str(len(ranks) + 1), "--max-seq", "16"], check=True, stdout=subprocess.DEVNULL)
        print(f"corpus: {len(text.encode())} bytes (tests/bpe_corpus.py, seed 20); vocabulary {vocab}")
        merges = cached_merges(ranks) if tokenizers else None
        speed = []
        tf = tokfile.bpe_from_tiktoken(vocab, "gpt-2", {EOT: len(ranks)})
        for pre in tokfile.PRE:
            # smollm has no single pattern for tiktoken: its reference is tokenizers' only
            enc = tiktoken.Encoding(f"gpt2-{pre}", pat_str=tokfile.PATTERNS.get(pre, tokfile.PATTERNS["gpt-2"]),
                                    mergeable_ranks=ranks, special_tokens={EOT: len(ranks)})
            tf.pre = pre
            path = os.path.join(tmp, f"{pre}.tiktoken.bpe")
            with open(path, "wb") as f:
                f.write(tf.to_bytes())
            if pre in tokfile.PATTERNS:
                t0 = time.perf_counter()
                want = enc.encode_ordinary(text)
                tk_ms = 1e3 * (time.perf_counter() - t0)
                got, timing = ours(path, model, corpus_path)
                compare(f"{pre}: tiktoken, plain text", got, want, enc.decode)
                got_s, _ = ours(path, model, corpus_path, "--special")
                compare(f"{pre}: tiktoken, --special ({EOT} a token)", got_s, enc.encode(text, allowed_special="all"),
                        enc.decode)
                back = b"".join(tf.tokens[i] for i in got)
                checks.report(back == text.encode(), f"{pre}: the ids decode to the corpus, byte for byte")
                ours_ms = [float(timing.split(" in ")[1].split()[0])]
                tk_all = [tk_ms]
                for _ in range(SPEED_REPS - 1):  # alternating, medians
                    ours_ms.append(float(ours(path, model, corpus_path)[1].split(" in ")[1].split()[0]))
                    t0 = time.perf_counter()
                    enc.encode_ordinary(text)
                    tk_all.append(1e3 * (time.perf_counter() - t0))
                speed.append((pre, statistics.median(ours_ms), statistics.median(tk_all)))
            if pre == "qwen2":
                run_check(path, model)
            if not tokenizers:
                continue
            folder = os.path.join(tmp, f"hf-{pre}")
            os.makedirs(folder)
            with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(hf_tokenizer_json(ranks, merges, pre), f)
            hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
            tf_hf = tokfile.bpe_from_hf(folder)
            checks.report(tf_hf.pre == pre and len(tf_hf.merges) == len(merges),
                          f"{pre}: bpe_from_hf reads the tokenizer.json (pre {tf_hf.pre}, {len(tf_hf.merges)} merges)")
            path_hf = os.path.join(tmp, f"{pre}.hf.bpe")
            with open(path_hf, "wb") as f:
                f.write(tf_hf.to_bytes())
            got_hf, _ = ours(path_hf, model, corpus_path, "--special")
            compare(f"{pre}: Hugging Face tokenizers {tokenizers.__version__}", got_hf,
                    hf.encode(text, add_special_tokens=False).ids, enc.decode)
            if pre == "llama-bpe":  # once: the reading does not depend on pre (flags do)
                gguf_check(tf_hf, pre, tmp)
            if pre == "qwen2":
                nfc_check(hf_tokenizer_json(ranks, merges, pre), text, model, tmp, tokenizers, enc.decode)
        for pre, ms, tk in speed:
            print(f"speed {pre}: ours {ms:.1f} ms, tiktoken {tiktoken.__version__} {tk:.1f} ms: "
                  f"{tk / ms:.2f}x tiktoken's speed (one thread, {len(text.encode())} bytes, medians of {SPEED_REPS})")


if __name__ == "__main__":
    checks.run(main)

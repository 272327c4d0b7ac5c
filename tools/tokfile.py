#!/usr/bin/env python3
"""Writer of the byte-level BPE tokenizer file of model/bpe.h ("MLBP").

API (tools/convert.py and the tests import this module):
    tf = bpe_from_gguf(reader)            # a gguf.GGUFReader (tokenizer.ggml.* with model "gpt2")
    tf = bpe_from_hf(folder)              # tokenizer.json (+ tokenizer_config.json) of a HF model
    tf = bpe_from_tiktoken(path, pre, specials={"<|endoftext|>": 50256})
    tf.pad_to(n)                          # add unused "[PAD<i>]" tokens up to the model's vocab
    data = tf.to_bytes()                  # the file, as the C loader reads it (and .mlb v2 embeds it)
    tf = TokFile.from_bytes(data)         # and back (tests)
A TokFile holds: pre ("gpt-2", "llama-bpe", "qwen2", "smollm": each number
character alone, gpt-2's rule between; SmolLM2's Digits + ByteLevel), tokens (raw bytes),
types (TYPE_*), merges ([(left, right, result)] in rank order), flags
(IGNORE_MERGES, RANK_BY_RESULT, NFC), bos, eos, eot (-1: none) and add_bos.
Every failure raises TokFileError with a message naming the field.

Command line:
    tools/tokfile.py (--gguf F | --hf DIR | --tiktoken F --pre NAME) -o OUT [--pad N]
"""
import argparse
import base64
import json
import os
import struct
import sys

MAGIC = b"MLBP"
VERSION = 1
PRE = {"gpt-2": 0, "llama-bpe": 1, "qwen2": 2, "smollm": 3}
IGNORE_MERGES, RANK_BY_RESULT, NFC = 1, 2, 4
# llama.cpp's other tokenizer.ggml.pre names for the same split rules
GGUF_PRE_ALIASES = {"llama3": "llama-bpe", "llama-v3": "llama-bpe", "falcon3": "llama-bpe", "deepseek-r1-qwen": "qwen2"}
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER, TYPE_UNUSED, TYPE_BYTE = 1, 2, 3, 4, 5, 6
MAX_TOKEN_LEN = 1024

# The published split patterns (the reference the C pre-tokenizers follow;
# used here to recognise a tokenizer.json and by the tests with tiktoken).
PATTERNS = {
    "gpt-2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "llama-bpe": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}
# End-of-turn tokens of the families, when the source does not name one.
EOT_NAMES = (b"<|im_end|>", b"<|eot_id|>", b"<|end_of_text|>")


class TokFileError(Exception):
    pass


def byte_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


# str.translate table: each mapped character to the latin-1 character of its
# byte; every other character below U+0100 to U+FFFF, which latin-1 refuses.
_UNMAP = {ord(c): b for b, c in byte_to_unicode().items()}
_UNMAP.update({c: 0xFFFF for c in range(256) if c not in _UNMAP})


def unmap(text, what):
    """Raw bytes of a token written in GPT-2's printable form."""
    try:
        return text.translate(_UNMAP).encode("latin-1")
    except UnicodeEncodeError as e:
        bad = next(c for c in text if _UNMAP.get(ord(c), 0xFFFF) == 0xFFFF)
        raise TokFileError(f"{what}: {text!r} has {bad!r}, not a character of GPT-2's byte map") from e


class TokFile:
    def __init__(self, pre, tokens, types, merges, flags=0, bos=-1, eos=-1, eot=-1, add_bos=0):
        if pre not in PRE:
            raise TokFileError(f"pre-tokenizer {pre!r} is not supported (supported: {', '.join(PRE)})")
        self.pre, self.tokens, self.types, self.merges = pre, list(tokens), list(types), list(merges)
        self.flags, self.bos, self.eos, self.eot, self.add_bos = flags, bos, eos, eot, int(bool(add_bos))

    def pad_to(self, n):
        if n < len(self.tokens):
            raise TokFileError(f"pad_to: the model's vocab {n} is smaller than the {len(self.tokens)} tokens")
        for i in range(len(self.tokens), n):
            self.tokens.append(b"[PAD%d]" % i)
            self.types.append(TYPE_UNUSED)

    def check(self):
        n = len(self.tokens)
        if not 256 <= n <= (1 << 22):
            raise TokFileError(f"n_tokens: {n}, expected 256..{1 << 22}")
        if len(self.types) != n:
            raise TokFileError(f"token_type: {len(self.types)} entries for {n} tokens")
        for i, (t, ty) in enumerate(zip(self.tokens, self.types)):
            if not 1 <= len(t) <= MAX_TOKEN_LEN:
                raise TokFileError(f"token {i}: {len(t)} bytes, expected 1..{MAX_TOKEN_LEN}")
            if not TYPE_NORMAL <= ty <= TYPE_BYTE:
                raise TokFileError(f"token {i}: type {ty}, expected 1..6")
        singles = {t for t, ty in zip(self.tokens, self.types) if ty == TYPE_NORMAL and len(t) == 1}
        if len(singles) != 256:
            missing = sorted(set(range(256)) - {t[0] for t in singles})
            raise TokFileError(f"no one-byte normal token for byte 0x{missing[0]:02x} (byte-level BPE needs all 256)")
        for r, (a, b, c) in enumerate(self.merges):
            if not (0 <= a < n and 0 <= b < n and 0 <= c < n) or self.tokens[a] + self.tokens[b] != self.tokens[c]:
                raise TokFileError(f"merge {r}: {a} {b} -> {c} is not a merge of two tokens")
        for key in ("bos", "eos", "eot"):
            v = getattr(self, key)
            if not -1 <= v < n:
                raise TokFileError(f"{key}: {v}, expected -1 or 0..{n - 1}")
        if self.add_bos and self.bos < 0:
            raise TokFileError("add_bos is set but there is no bos token")

    def to_bytes(self):
        self.check()
        out = [MAGIC, struct.pack("<7I", VERSION, PRE[self.pre], self.flags, len(self.tokens), len(self.merges),
                                  self.bos & 0xFFFFFFFF, self.eos & 0xFFFFFFFF),
               struct.pack("<iIII", self.eot, self.add_bos, 0, 0)]
        for t, ty in zip(self.tokens, self.types):
            out.append(struct.pack("<II", len(t), ty) + t)
        out.append(b"".join(struct.pack("<3I", *m) for m in self.merges))
        return b"".join(out)

    @staticmethod
    def from_bytes(data):
        if data[:4] != MAGIC:
            raise TokFileError("magic: not a BPE tokenizer file")
        version, pre, flags, n, nm, bos, eos, eot, add_bos, _, _ = struct.unpack_from("<3I2I3iIII", data, 4)
        if version != VERSION:
            raise TokFileError(f"version: {version}, expected {VERSION}")
        pos, tokens, types = 48, [], []
        for _ in range(n):
            ln, ty = struct.unpack_from("<II", data, pos)
            tokens.append(bytes(data[pos + 8:pos + 8 + ln]))
            types.append(ty)
            pos += 8 + ln
        merges = [struct.unpack_from("<3I", data, pos + 12 * i) for i in range(nm)]
        name = {v: k for k, v in PRE.items()}[pre]
        return TokFile(name, tokens, types, merges, flags, bos, eos, eot, add_bos)

    def token_id(self, text):
        b = text.encode() if isinstance(text, str) else text
        for i, t in enumerate(self.tokens):
            if t == b:
                return i
        return -1


def _merges_from_pairs(tokens, pairs, what):
    """[(left, right, result)] from merge pairs of token strings (GPT-2 form)."""
    index = {}
    for i, t in enumerate(tokens):
        index.setdefault(t, i)
    out = []
    for r, (a, b) in enumerate(pairs):
        ra, rb = unmap(a, f"{what} merge {r}"), unmap(b, f"{what} merge {r}")
        ids = [index.get(x, -1) for x in (ra, rb, ra + rb)]
        if min(ids) < 0:
            raise TokFileError(f"{what}: merge {r} ({a!r} {b!r}) names a token the vocabulary lacks")
        out.append(tuple(ids))
    return out


def _guess_eot(tokens, types):
    for name in EOT_NAMES:
        for i, (t, ty) in enumerate(zip(tokens, types)):
            if t == name and ty in (TYPE_CONTROL, TYPE_USER):
                return i
    return -1


# ---------------------------------------------------------------- GGUF
def bpe_from_gguf(reader):
    """From a gguf.GGUFReader whose tokenizer.ggml.model is "gpt2"."""
    k = "tokenizer.ggml."

    def get(key, default=None):
        f = reader.get_field(k + key)
        return default if f is None else f.contents()

    model = get("model")
    if model != "gpt2":
        raise TokFileError(f"{k}model is {model!r}, expected 'gpt2' (byte-level BPE)")
    named = get("pre", "gpt-2")
    pre = GGUF_PRE_ALIASES.get(named, named)
    if pre not in PRE:
        raise TokFileError(f"{k}pre is {named!r}; supported: {', '.join(PRE)} "
                           f"(and llama.cpp's {', '.join(GGUF_PRE_ALIASES)})")
    field = reader.get_field(k + "tokens")
    if field is None:
        raise TokFileError(f"{k}tokens is missing")
    names = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    n = len(names)
    types = list(get("token_type", [TYPE_NORMAL] * n))
    if len(types) != n:
        raise TokFileError(f"{k}token_type has {len(types)} entries, {k}tokens {n}")
    tokens = []
    for i, (s, ty) in enumerate(zip(names, types)):
        if ty == TYPE_NORMAL:
            tokens.append(unmap(s, f"{k}tokens[{i}]"))
        elif ty == TYPE_BYTE and len(s) == 6 and s.startswith("<0x"):
            tokens.append(s.encode())
        else:  # control, user-defined, unused: their text as it is
            tokens.append(s.encode("utf-8"))
    pairs = []
    for r, m in enumerate(get("merges", [])):
        a, sep, b = m.partition(" ")
        if not sep:
            raise TokFileError(f"{k}merges[{r}] is {m!r}, expected 'left right'")
        pairs.append((a, b))
    merges = _merges_from_pairs(tokens, pairs, k + "merges")
    ids = {}
    for key in ("bos", "eos", "eot"):
        v = get(key + "_token_id", -1)
        ids[key] = -1 if v is None else int(v)
    if ids["eot"] < 0:
        ids["eot"] = _guess_eot(tokens, types)
    add_bos = bool(get("add_bos_token", False)) and ids["bos"] >= 0
    # Qwen2's tokenizer.json normalizes to NFC, and so does that of DeepSeek-R1's Qwen distills
    # (deepseek-r1-qwen); a GGUF does not say so, its pre names the family
    flags = IGNORE_MERGES if pre == "llama-bpe" else NFC if pre == "qwen2" else 0
    return TokFile(pre, tokens, types, merges, flags, ids["bos"], ids["eos"], ids["eot"], add_bos)


# ---------------------------------------------------------------- Hugging Face
def _find_split_pattern(node):
    if isinstance(node, dict):
        if node.get("type") == "Split" and isinstance(node.get("pattern"), dict):
            return node["pattern"].get("Regex") or node["pattern"].get("String")
        for v in node.values():
            p = _find_split_pattern(v)
            if p:
                return p
    elif isinstance(node, list):
        for v in node:
            p = _find_split_pattern(v)
            if p:
                return p
    return None


def _hf_pre(tj, what):
    pt = tj.get("pre_tokenizer")
    pattern = _find_split_pattern(pt)
    if pattern:
        for name, p in PATTERNS.items():
            if pattern == p:
                return name
        raise TokFileError(f"{what}: pre_tokenizer pattern {pattern!r} is none of {', '.join(PRE)}")
    text = json.dumps(pt)
    if '"ByteLevel"' in text:
        if '"Digits"' in text:
            if '"individual_digits": true' not in text:
                raise TokFileError(f"{what}: pre_tokenizer Digits without individual_digits is not supported")
            return "smollm"
        return "gpt-2"
    raise TokFileError(f"{what}: pre_tokenizer {json.dumps(pt)[:80]} is not a byte-level BPE one")


def _hf_normalizer(tj, what):
    """The tokenizer.json normalizer as flags: none, or NFC (Qwen2's). Any
    other would give its text other ids than ours: refused."""
    norm = tj.get("normalizer")
    parts = norm.get("normalizers") if isinstance(norm, dict) and norm.get("type") == "Sequence" else [norm]
    kinds = {p.get("type") if isinstance(p, dict) else repr(p) for p in parts or [] if p is not None}
    if kinds - {"NFC"}:
        raise TokFileError(f"{what}: normalizer {json.dumps(norm)[:80]} is not supported (NFC or none)")
    return NFC if kinds else 0


def _content(v):
    return v.get("content") if isinstance(v, dict) else v


def bpe_from_hf(folder, pre=None):
    """From a Hugging Face folder: tokenizer.json (model BPE, byte-level) and,
    if present, tokenizer_config.json (bos_token, eos_token, add_bos_token)."""
    path = os.path.join(folder, "tokenizer.json")
    try:
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
    except (OSError, ValueError) as e:
        raise TokFileError(f"{path}: {e}")
    model = tj.get("model") or {}
    if model.get("type") != "BPE":
        raise TokFileError(f"{path}: model.type is {model.get('type')!r}, expected 'BPE'")
    pre = pre or _hf_pre(tj, path)
    vocab = model.get("vocab") or {}
    added = tj.get("added_tokens") or []
    n = max([v for v in vocab.values()] + [a["id"] for a in added]) + 1
    tokens, types = [None] * n, [TYPE_UNUSED] * n
    for s, i in vocab.items():
        tokens[i], types[i] = unmap(s, f"{path}: model.vocab[{i}]"), TYPE_NORMAL
    for a in added:
        tokens[a["id"]] = a["content"].encode("utf-8")
        types[a["id"]] = TYPE_CONTROL if a.get("special") else TYPE_USER
    for i in range(n):
        if tokens[i] is None:
            tokens[i] = b"[PAD%d]" % i
    pairs = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model.get("merges") or []]
    merges = _merges_from_pairs(tokens, pairs, f"{path}: model.merges")
    flags = (IGNORE_MERGES if model.get("ignore_merges") else 0) | _hf_normalizer(tj, path)
    cfg = {}
    cpath = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(cpath):
        with open(cpath, encoding="utf-8") as f:
            cfg = json.load(f)
    tf = TokFile(pre, tokens, types, merges, flags)
    ids = {}
    for key in ("bos", "eos"):
        name = _content(cfg.get(key + "_token"))
        ids[key] = tf.token_id(name) if name else -1
    tf.bos, tf.eos = ids["bos"], ids["eos"]
    tf.eot = _guess_eot(tokens, types)
    # add_bos_token when the config says; else whether the post-processor
    # (Llama 3's TemplateProcessing) puts the bos token in front
    if "add_bos_token" in cfg:
        add = bool(cfg["add_bos_token"])
    else:
        name = _content(cfg.get("bos_token"))
        add = bool(name) and json.dumps({"id": name})[1:-1] in json.dumps(tj.get("post_processor"))
    tf.add_bos = int(add and tf.bos >= 0)
    return tf


# ---------------------------------------------------------------- tiktoken
def bpe_from_tiktoken(path, pre, specials=None):
    """From a tiktoken file ("base64 rank" lines; the rank is the id) with the
    pre-tokenizer pre. The merges are every (a, b) whose bytes joined are a
    token, ranked by the result (tiktoken's rule), and a piece that is a token
    stays whole (IGNORE_MERGES). specials: {text: id} added as control tokens."""
    ranks = {}
    with open(path, "rb") as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
            except ValueError as e:
                raise TokFileError(f"{path}:{ln}: expected 'base64 rank' ({e})")
    specials = specials or {}
    n = max(list(ranks.values()) + list(specials.values())) + 1
    tokens, types = [None] * n, [TYPE_UNUSED] * n
    for t, r in ranks.items():
        tokens[r], types[r] = t, TYPE_NORMAL
    for s, r in specials.items():
        tokens[r], types[r] = s.encode("utf-8"), TYPE_CONTROL
    for i in range(n):
        if tokens[i] is None:
            tokens[i] = b"[PAD%d]" % i
    merges = []
    for t, r in sorted(ranks.items(), key=lambda x: x[1]):
        for k in range(1, len(t)):
            a, b = ranks.get(t[:k]), ranks.get(t[k:])
            if a is not None and b is not None:
                merges.append((a, b, r))
    eot = specials.get("<|endoftext|>", -1)
    return TokFile(pre, tokens, types, merges, IGNORE_MERGES | RANK_BY_RESULT, -1, eot, eot, 0)


def main(argv):
    ap = argparse.ArgumentParser(description="Write a BPE tokenizer file (model/bpe.h).")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--gguf", help="a GGUF file with a byte-level BPE vocabulary")
    src.add_argument("--hf", help="a Hugging Face model folder (tokenizer.json)")
    src.add_argument("--tiktoken", help="a tiktoken vocabulary file (e.g. gpt2.tiktoken)")
    ap.add_argument("--pre", choices=sorted(PRE), help="pre-tokenizer (required with --tiktoken)")
    ap.add_argument("--special", action="append", default=[], metavar="TEXT=ID",
                    help="with --tiktoken: a control token (default <|endoftext|>=n)")
    ap.add_argument("--pad", type=int, help="pad with unused tokens up to this vocab size")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    try:
        if a.gguf:
            try:
                import gguf
            except ImportError as e:
                sys.exit(f"tokfile.py: --gguf needs the gguf package (python3 -m pip install gguf), which is not "
                         f"importable here ({e})")
            tf = bpe_from_gguf(gguf.GGUFReader(a.gguf))
        elif a.hf:
            tf = bpe_from_hf(a.hf, a.pre)
        else:
            if not a.pre:
                ap.error("--tiktoken needs --pre")
            specials = {}
            for s in a.special:
                text, _, i = s.rpartition("=")
                specials[text] = int(i)
            if not a.special:
                with open(a.tiktoken, "rb") as f:
                    specials = {"<|endoftext|>": sum(1 for line in f if line.strip())}
            tf = bpe_from_tiktoken(a.tiktoken, a.pre, specials)
        if a.pad:
            tf.pad_to(a.pad)
        data = tf.to_bytes()
    except (TokFileError, OSError) as e:
        print(f"tokfile: {e}", file=sys.stderr)
        return 1
    with open(a.output, "wb") as f:
        f.write(data)
    print(f"tokfile: {a.output}: {len(tf.tokens)} tokens, {len(tf.merges)} merges, pre {tf.pre}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

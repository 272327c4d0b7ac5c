"""A SentencePiece tokenizer.model as a llama2.c tokenizer.bin (tools/convert.py,
Hugging Face folders), without the sentencepiece package.

tokenizer.model is a protobuf ModelProto: field 1 (repeated, length-delimited)
holds one SentencePiece each: field 1 the piece (UTF-8), field 2 its score
(float32), field 3 its type. Other fields are skipped. The tokenizer.bin is
what llama2.c's tokenizer.py exports: U+2581 -> ' ', BOS "\\n<s>\\n", EOS
"\\n</s>\\n", the scores as they are.
"""
import struct

import mlb

SPACE = "\u2581".encode()


class SPError(Exception):
    pass


def _varint(buf, off):
    v, shift = 0, 0
    while True:
        if off >= len(buf) or shift > 63:
            raise SPError("a varint runs past the end")
        b = buf[off]
        off += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, off


def _fields(buf):
    """(field number, wire type, value) of one message; value: int or bytes."""
    off = 0
    while off < len(buf):
        key, off = _varint(buf, off)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, off = _varint(buf, off)
        elif wt == 1:
            v, off = buf[off:off + 8], off + 8
        elif wt == 2:
            n, off = _varint(buf, off)
            v, off = buf[off:off + n], off + n
        elif wt == 5:
            v, off = buf[off:off + 4], off + 4
        else:
            raise SPError(f"wire type {wt} of field {num} is not a protobuf one")
        if off > len(buf):
            raise SPError(f"field {num} runs past the end")
        yield num, wt, v


def pieces(path):
    """[(piece str, score)] of a tokenizer.model, in id order."""
    with open(path, "rb") as f:
        buf = f.read()
    out = []
    try:
        for num, wt, v in _fields(buf):
            if num != 1 or wt != 2:
                continue
            piece, score = None, 0.0
            for n2, w2, v2 in _fields(v):
                if n2 == 1 and w2 == 2:
                    piece = v2.decode("utf-8")
                elif n2 == 2 and w2 == 5:
                    score = struct.unpack("<f", v2)[0]
            if piece is None:
                raise SPError(f"piece {len(out)} has no text")
            out.append((piece, score))
    except (SPError, UnicodeDecodeError) as e:
        raise SPError(f"{path}: not a SentencePiece model ({e})") from None
    if not out:
        raise SPError(f"{path}: not a SentencePiece model (no pieces)")
    return out


def tokenizer_bin(path, vocab):
    """The llama2.c tokenizer.bin bytes of tokenizer.model PATH for a model of
    vocab tokens (<unk> 0, <s> 1, </s> 2: the runtime's ids)."""
    ps = pieces(path)
    if len(ps) != vocab:
        raise SPError(f"{path}: {len(ps)} pieces, but the model's vocabulary has {vocab}")
    if [p for p, _ in ps[1:3]] != ["<s>", "</s>"]:
        raise SPError(f"{path}: ids 1 and 2 are {ps[1][0]!r} and {ps[2][0]!r}, not <s> and </s>")
    out = []
    for i, (p, score) in enumerate(ps):
        b = {1: b"\n<s>\n", 2: b"\n</s>\n"}.get(i, p.encode("utf-8").replace(SPACE, b" "))
        out.append((b, score))
    return mlb.tokenizer_bytes(out)

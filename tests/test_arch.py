#!/usr/bin/env python3
"""Issue 20's families through tools/convert.py and the runtime, on tiny
random-weight models written here (tools/gguf_random.py, seeds fixed):
  * each family's Q8_0 GGUF (llama3: rope_freqs; qwen2: biases; qwen3: q/k
    norms, head_dim 32 with dim 64) converts to a .mlb version 2 holding the
    fields it needs and its tokenizer, and ml_run runs it without -z;
  * fidelity against tests/ref_forward.py (float32 numpy on the GGUF's own
    weights, NeoX rotation and all): logits within 0.3, top-1 equal wherever
    the reference's top two are 0.25 apart, overall top-1 printed (random
    weights give flat distributions: near-ties decide the rest);
  * the same model as a Hugging Face folder (config.json, safetensors, HF's
    rotate-halves q/k order) converts to the same arrays;
  * each family's kind of vocabulary (byte-level BPE, tools/gguf_random.py's
    VOCABS: Llama 3's llama-bpe, Qwen's qwen2, SmolLM2's smollm, with their
    special tokens, BOS/EOS and chat template) is embedded, from the GGUF and
    from the HF folder's tokenizer.json alike; ml_tokenize gives Hugging
    Face tokenizers' ids (when it is installed), specials as text and as
    tokens; what ml_run prints is the bytes of its ids, whole;
  * what the format cannot hold is refused, named: sliding window, MoE,
    another rope type, biases elsewhere, --mlb-version 1 for a model that
    needs version 2; a BPE vocabulary without tools/tokfile.py.
Run from the repo root. env: BUILD (ml_run), RUNNER.
"""
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
from py_checks import Checks  # noqa: E402
import gguf_random  # noqa: E402
import mlb  # noqa: E402
import ref_forward  # noqa: E402
import tokfile  # noqa: E402

CONVERT, GEN = (os.path.join(ROOT, "tools", n) for n in ("convert.py", "gguf_random.py"))
RUNNER, BUILD = shlex.split(os.environ.get("RUNNER", "")), os.environ.get("BUILD", "build/scalar")
ML_RUN = os.path.join(BUILD, "ml_run")
FAMILIES = ("llama3", "qwen2", "qwen3", "llama")  # llama: SmolLM2's (plain Llama, smollm vocabulary)
PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside"
# text for the tokenizer checks: words the synthetic merges spell, split
# multi-byte characters, digits, contractions, a special token's spelling
TOK_TEXT = ("Once upon a time, the café 日本 東京 😀 sea.\n  It's 12345 o'clock\t\t<|im_end|> naïve "
            "über\r\n\n<|eot_id|> WE'LL 中文!")
ck = Checks()


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, errors="replace", timeout=300)
    return r.returncode, r.stdout, r.stderr


def convert(*args):
    return run(sys.executable, CONVERT, *args)


# ---------------------------------------------------------------- HF folder
def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for name, x in tensors.items():
        b = np.ascontiguousarray(x, "<f4").tobytes()
        header[name] = dict(dtype="F32", shape=list(x.shape), data_offsets=[off, off + len(b)])
        off += len(b)
        blobs.append(b)
    hj = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def to_halves(w, n_heads):
    """Our interleaved-pair rows -> HF's rotate-halves rows (hf_unpermute's inverse)."""
    rows = w.shape[0]
    hd = rows // n_heads
    return w.reshape(n_heads, hd // 2, 2, -1).transpose(0, 2, 1, 3).reshape(w.shape)


def write_hf(folder, fam, cfg, w):
    """The GGUF's weights as a Hugging Face folder of model_type llama/qwen2/qwen3,
    with the family's tokenizer.json and tokenizer_config.json."""
    os.makedirs(folder)
    bos, eos = gguf_random.hf_tokenizer_files(folder, fam, cfg["vocab"])
    neox = cfg["neox"]
    t = {"model.embed_tokens.weight": w["tok_emb"], "model.norm.weight": w["final_norm"]}
    names = dict(attn_norm="input_layernorm.weight", wq="self_attn.q_proj.weight",
                 wk="self_attn.k_proj.weight", wv="self_attn.v_proj.weight",
                 wo="self_attn.o_proj.weight", ffn_norm="post_attention_layernorm.weight",
                 w1="mlp.gate_proj.weight", w2="mlp.down_proj.weight", w3="mlp.up_proj.weight",
                 bq="self_attn.q_proj.bias", bk="self_attn.k_proj.bias", bv="self_attn.v_proj.bias",
                 q_norm="self_attn.q_norm.weight", k_norm="self_attn.k_norm.weight")
    for l, lw in enumerate(w["layers"]):
        for k, x in lw.items():
            if not neox and k in ("wq", "wk"):  # GGUF's Llama rows are interleaved pairs
                x = to_halves(x, cfg["n_heads"] if k == "wq" else cfg["n_kv_heads"])
            t[f"model.layers.{l}.{names[k]}"] = x
    write_safetensors(os.path.join(folder, "model.safetensors"), t)
    c = dict(model_type="qwen2" if fam == "qwen2" else "qwen3" if fam == "qwen3" else "llama",
             hidden_size=cfg["dim"], intermediate_size=cfg["hidden_dim"],
             num_hidden_layers=cfg["n_layers"], num_attention_heads=cfg["n_heads"],
             num_key_value_heads=cfg["n_kv_heads"], vocab_size=cfg["vocab"],
             max_position_embeddings=128, rope_theta=cfg["rope_theta"],
             rms_norm_eps=cfg["norm_eps"], tie_word_embeddings=True, hidden_act="silu",
             bos_token_id=bos, eos_token_id=eos)
    if fam == "llama3":
        c["rope_scaling"] = dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                                 high_freq_factor=4.0, original_max_position_embeddings=8192)
    if fam == "qwen2":
        c.update(sliding_window=128, use_sliding_window=False)
    if fam == "qwen3":
        c.update(head_dim=cfg["head_dim"], attention_bias=False)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f)
    return c


# ---------------------------------------------------------------- checks
def family(tmp, fam):
    gg, out = os.path.join(tmp, fam + ".gguf"), os.path.join(tmp, fam + ".mlb")
    rc, _, se = run(sys.executable, GEN, "--qtype", "q8_0", "--seed", "7", fam, gg)
    ck.report(rc == 0, f"{fam}: tools/gguf_random.py writes the tiny Q8_0 GGUF{se[-300:]}")
    rc, so, se = convert(gg, out)
    ck.report(rc == 0, f"{fam}: the GGUF converts{se[-300:]}")
    if rc:
        return
    h, arrays = mlb.read_mlb(out)
    want = dict(llama3=(0, 0, 1), qwen2=(mlb.FLAG_QKV_BIAS, 0, 0), qwen3=(mlb.FLAG_QK_NORM, 32, 0),
                llama=(0, 0, 0))[fam]
    got = (h["flags"], h["head_dim"], h["rope_scaling"])
    voc = gguf_random.VOCABS[fam]
    tf = tokfile.TokFile.from_bytes(h["tokenizer"]) if h["tokenizer"][:4] == tokfile.MAGIC else None
    ids = tuple(tf.token_id(voc[k]) if tf else -2 for k in ("bos", "eos", "eos")) + (int(voc["add_bos"]),)
    ck.report(h["version"] == 2 and got == want and tf is not None and tf.pre == voc["pre"]
              and h["chat_template"] == voc["template"].encode() and min(ids) >= 0
              and (h["bos"], h["eos"], h["eot"], h["add_bos"]) == ids,
              f"{fam}: a one-file .mlb version 2: flags/head_dim/rope_scaling {got} (want {want}), "
              f"a byte-level BPE tokenizer (pre {tf.pre if tf else None}, {len(h['tokenizer'])} bytes), "
              f"the chat template, bos/eos/eot/add_bos {(h['bos'], h['eos'], h['eot'], h['add_bos'])} "
              f"(want {ids}: {voc['bos']} {voc['eos']})")
    if fam == "llama3":
        ck.report((h["rope_factor"], h["rope_low_freq_factor"], h["rope_high_freq_factor"],
                   h["rope_orig_max_seq"]) == (32.0, 1.0, 4.0, 8192),
                  f"{fam}: rope_freqs.weight read back as Llama 3's parameters (factor 32, 1, 4, 8192)")
    # the runtime, no -z
    lf, idf = os.path.join(tmp, "l.f32"), os.path.join(tmp, "ids")
    rc, _, se = run(*RUNNER, ML_RUN, "-m", out, "-i", PROMPT, "-n", "0",
                    "--temp", "0", "--logits", lf, "--ids", idf)
    ck.report(rc == 0, f"{fam}: ml_run -m model.mlb runs without -z (the embedded tokenizer){se[-300:]}")
    if rc:
        return
    if tf:
        tokenizer_checks(tmp, fam, out, tf)
    cfg, w = ref_forward.load_gguf(gg)
    ids = [int(x) for x in open(idf).read().split()]
    got = np.fromfile(lf, "<f4").reshape(-1, cfg["vocab"])
    ref = ref_forward.forward(cfg, w, ids)[:len(got)]
    top = got.argmax(1) == ref.argmax(1)
    srt = np.sort(ref, axis=1)
    clear = srt[:, -1] - srt[:, -2] >= 0.25
    d = float(np.abs(got - ref).max())
    print(f"# {fam}: {len(got)} positions, top-1 {100 * top.mean():.2f}%, max |dlogit| {d:.3f}, "
          f"{clear.sum()} positions with a 0.25 margin")
    ck.report(d <= 0.3 and top[clear].all() and top.mean() >= 0.9,
              f"{fam}: Q8_0 logits against the float reference: max |dlogit| {d:.3f} <= 0.3, top-1 "
              f"{100 * top.mean():.1f}% overall, {100 * top[clear].mean():.0f}% where the margin is >= 0.25")
    # the same weights from a Hugging Face folder: the same arrays
    folder = os.path.join(tmp, fam + "-hf")
    write_hf(folder, fam, cfg, w)
    hout = os.path.join(tmp, fam + "-hf.mlb")
    rc, _, se = convert(folder, hout)
    ck.report(rc == 0, f"{fam}: the Hugging Face folder converts{se[-300:]}")
    if rc == 0:
        h2, a2 = mlb.read_mlb(hout)
        same = [k for k in arrays if k not in ("tokenizer", "chat_template")
                and not np.array_equal(np.asarray(arrays[k]), np.asarray(a2.get(k)))]
        fields = ("tokenizer", "chat_template", "bos", "eos", "eot", "add_bos")
        differ = [k for k in fields if h2[k] != h[k]]
        ck.report(not differ, f"{fam}: the HF folder's tokenizer.json and tokenizer_config.json embed the "
                  f"GGUF's tokenizer file, template and special ids, byte for byte"
                  + (f"; differ: {differ}" if differ else ""))
        ck.report(not same and h2["flags"] == h["flags"] and h2["head_dim"] == h["head_dim"]
                  and h2["rope_scaling"] == h["rope_scaling"],
                  f"{fam}: HF folder (rotate-halves q/k, config.json) and GGUF give the same arrays"
                  + (f"; differ: {same[:3]}" if same else ""))
    rc, _, se = convert(gg, os.path.join(tmp, "v1.mlb"), "--mlb-version", "1")
    if fam == "llama":  # plain Llama fits version 1 (its tokenizer then beside it, -z)
        ck.report(rc == 0, f"{fam}: --mlb-version 1 converts (no new field needed){se[-300:]}")
    else:
        ck.report(rc == 1 and "needs version 2" in se,
                  f"{fam}: --mlb-version 1 refused, naming why: {se.strip()[-160:]}")


def tokenizer_checks(tmp, fam, model, tf):
    """ml_tokenize against HF tokenizers on the family's tokenizer.json; and
    ml_run's printed text against its ids."""
    rc, so, se = run(*RUNNER, os.path.join(BUILD, "ml_tokenize"), "-m", model, "-i", TOK_TEXT, "--ids")
    plain = [int(x) for x in so.split()]
    rc2, so, se2 = run(*RUNNER, os.path.join(BUILD, "ml_tokenize"), "-m", model, "-i", TOK_TEXT, "--ids",
                       "--special")
    special = [int(x) for x in so.split()]
    ck.report(rc == 0 and rc2 == 0 and plain and special,
              f"{fam}: ml_tokenize -m model.mlb (no -z) encodes the text{(se + se2)[-300:]}")
    bos = [tf.bos] if tf.add_bos else []
    spelled = b"".join(tf.tokens[i] for i in plain[len(bos):])
    ck.report(plain[:len(bos)] == bos and spelled == TOK_TEXT.encode() and tf.eos not in plain
              and len(special) < len(plain),
              f"{fam}: the ids spell the text (BOS first iff add_bos {tf.add_bos}); a special token's "
              f"spelling is text by default, one token with --special ({len(plain)} vs {len(special)} ids)")
    try:
        import tokenizers
    except ImportError:
        print(f"# {fam}: no Hugging Face tokenizers (pip install tokenizers): its ids not compared")
    else:
        folder = os.path.join(tmp, fam + "-tok")
        os.makedirs(folder, exist_ok=True)
        gguf_random.hf_tokenizer_files(folder, fam, len(tf.tokens))
        hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        want_special = bos + hf.encode(TOK_TEXT, add_special_tokens=False).ids
        hf.encode_special_tokens = True
        want_plain = bos + hf.encode(TOK_TEXT, add_special_tokens=False).ids
        ck.report(plain == want_plain and special == want_special,
                  f"{fam}: ml_tokenize's ids are HF tokenizers' {tokenizers.__version__} (pre {tf.pre}), "
                  f"specials as text ({len(plain)} ids) and as tokens ({len(special)} ids)"
                  + ("" if plain == want_plain else f"; ours {plain[:12]}.. theirs {want_plain[:12]}.."))
    # generated text: what ml_run prints is the bytes of its ids (prompt and
    # generated, control tokens print nothing), each UTF-8 character whole
    idf = os.path.join(tmp, "gen.ids")
    r = subprocess.run([*RUNNER, ML_RUN, "-m", model, "-i", TOK_TEXT, "-n", "120", "--temp", "0.9", "-s", "3",
                        "--ids", idf], capture_output=True, timeout=300)
    ids = [int(x) for x in open(idf).read().split()] if r.returncode == 0 else []
    want = b"".join(tf.tokens[i] for i in ids if tf.types[i] != tokfile.TYPE_CONTROL)
    want = bytes(c for c in want if c >= 0x20 or c in b"\t\n\r")  # ml_run drops raw control bytes
    ck.report(r.returncode == 0 and len(ids) > 84 and r.stdout in (want, want + b"\n"),
              f"{fam}: ml_run (no -z) prints the bytes of its {len(ids)} ids, none lost, doubled or "
              f"reordered (split UTF-8 characters released once whole; raw control bytes dropped)"
              f"{r.stderr.decode(errors='replace')[-200:]}")


def refusals(tmp):
    """HF configs the format cannot hold, each named."""
    cfg = dict(model_type="qwen2", hidden_size=64, intermediate_size=160, num_hidden_layers=1,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=384, rms_norm_eps=1e-6)
    cases = [("sliding window", dict(use_sliding_window=True, sliding_window=64), "sliding_window"),
             ("MoE", dict(num_experts=8), "mixture of experts"),
             ("another rope type", dict(rope_scaling=dict(rope_type="yarn", factor=4.0)), "rope_scaling"),
             ("biases elsewhere", dict(model_type="llama", mlp_bias=True), "mlp_bias"),
             ("another architecture", dict(model_type="gemma"), "model_type 'gemma'")]
    for i, (what, extra, want) in enumerate(cases):
        folder = os.path.join(tmp, f"bad{i}")
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(dict(cfg, **extra), f)
        write_safetensors(os.path.join(folder, "model.safetensors"), {"x": np.zeros(1, np.float32)})
        rc, _, se = convert(folder, os.path.join(tmp, "bad.mlb"))
        ck.report(rc == 1 and want in se and not os.path.exists(os.path.join(tmp, "bad.mlb")),
                  f"refused: {what}, naming {want!r}: {se.strip()[-160:]}")
    # a byte-level BPE vocabulary: through tools/tokfile.py, or a clear refusal without it
    folder = os.path.join(tmp, "bpe")
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(cfg, model_type="llama"), f)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(dict(model=dict(type="BPE"), pre_tokenizer=dict(type="ByteLevel")), f)
    write_safetensors(os.path.join(folder, "model.safetensors"), {"x": np.zeros(1, np.float32)})
    if not os.path.exists(os.path.join(ROOT, "tools", "tokfile.py")):
        rc, _, se = convert(folder, os.path.join(tmp, "bad.mlb"))
        ck.report(rc == 1 and "tools/tokfile.py" in se,
                  f"a BPE tokenizer.json without tools/tokfile.py: refused naming it: {se.strip()[-160:]}")


def hf_variants(tmp):
    """Hugging Face configs as real checkpoints write them: transformers 5's
    rope_parameters (rope_theta and the scaling in one dict, no top-level
    rope_theta) give the header of the older spelling; rope_type "default"
    is plain RoPE; a partial rotary factor is refused; a Qwen2 embedding
    padded past its tokenizer's ids (151936 rows, 151665 tokens) converts and
    runs, the gap filled with unused tokens."""
    gg = os.path.join(tmp, "v-llama3.gguf")
    run(sys.executable, GEN, "--qtype", "q8_0", "--seed", "7", "llama3", gg)
    cfg, w = ref_forward.load_gguf(gg)

    def folder_with(name, fam, edit, cfg=cfg, w=w):
        folder = os.path.join(tmp, name)
        c = write_hf(folder, fam, cfg, w)
        edit(c)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(c, f)
        out = folder + ".mlb"
        rc, _, se = convert(folder, out)
        return rc, se, (mlb.read_mlb(out)[0] if rc == 0 else None), out

    keys = ("rope_theta", "rope_scaling", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor",
            "rope_orig_max_seq")
    rc, se, ref, _ = folder_with("v-old", "llama3", lambda c: None)

    def v5(c):
        c["rope_parameters"] = dict(c.pop("rope_scaling"), rope_theta=c.pop("rope_theta"))
    rc2, se2, h, _ = folder_with("v-new", "llama3", v5)
    ck.report(rc == 0 and rc2 == 0 and all(h[k] == ref[k] for k in keys),
              "HF config: transformers 5's rope_parameters (rope_theta 500000, llama3 scaling inside) give "
              f"the header of rope_theta + rope_scaling: {[h[k] for k in keys] if h else se2.strip()[-200:]}")
    rc, se, h, _ = folder_with("v-default", "llama", lambda c: c.update(rope_scaling=dict(rope_type="default")))
    ck.report(rc == 0 and h["rope_scaling"] == 0,
              f"HF config: rope_scaling {{rope_type: default}} is plain RoPE, accepted{se.strip()[-200:]}")
    rc, se, h, _ = folder_with("v-partial", "llama", lambda c: c.update(partial_rotary_factor=0.5))
    ck.report(rc == 1 and "partial" in se, f"HF config: partial_rotary_factor 0.5 refused: {se.strip()[-160:]}")
    # Qwen2's padded embedding
    gq = os.path.join(tmp, "v-qwen2.gguf")
    run(sys.executable, GEN, "--qtype", "q8_0", "--seed", "7", "qwen2", gq)
    qc, qw = ref_forward.load_gguf(gq)
    n_tok, pad = qc["vocab"], 32
    rng = np.random.default_rng(1)
    qw = dict(qw, tok_emb=np.concatenate([qw["tok_emb"], rng.standard_normal((pad, qc["dim"]), np.float32)]))
    qc = dict(qc, vocab=n_tok + pad)

    def tok_short(c):
        bos, eos = gguf_random.hf_tokenizer_files(os.path.join(tmp, "v-qpad"), "qwen2", n_tok)
        c.update(bos_token_id=bos, eos_token_id=eos)
    rc, se, h, out = folder_with("v-qpad", "qwen2", tok_short, qc, qw)
    tf = tokfile.TokFile.from_bytes(h["tokenizer"]) if h else None
    ok = rc == 0 and len(tf.tokens) == n_tok + pad and all(t == tokfile.TYPE_UNUSED for t in tf.types[n_tok:])
    r2 = run(*RUNNER, ML_RUN, "-m", out, "-i", PROMPT, "-n", "80", "--temp", "0") if ok else (1, "", "")
    ck.report(ok and r2[0] == 0,
              f"HF qwen2: embedding of {n_tok + pad} rows, tokenizer.json of {n_tok} ids: the tokenizer is padded "
              f"with unused tokens and ml_run runs{(se + r2[2]).strip()[-200:]}")


def main():
    try:
        import gguf  # noqa: F401
    except ImportError:
        ck.skip("arch: no gguf package (pip install gguf)")
        return
    if not os.access(ML_RUN, os.X_OK):
        ck.skip(f"arch: no {ML_RUN} (build it first)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for fam in FAMILIES:
            family(tmp, fam)
        refusals(tmp)
        hf_variants(tmp)


if __name__ == "__main__":
    ck.run(main)

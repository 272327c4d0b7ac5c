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
import mlb  # noqa: E402
import ref_forward  # noqa: E402

CONVERT, GEN = (os.path.join(ROOT, "tools", n) for n in ("convert.py", "gguf_random.py"))
RUNNER, BUILD = shlex.split(os.environ.get("RUNNER", "")), os.environ.get("BUILD", "build/scalar")
ML_RUN = os.path.join(BUILD, "ml_run")
FAMILIES = ("llama3", "qwen2", "qwen3")
PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play outside"
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
    """The GGUF's weights as a Hugging Face folder of model_type llama/qwen2/qwen3."""
    os.makedirs(folder)
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
             rms_norm_eps=cfg["norm_eps"], tie_word_embeddings=True, hidden_act="silu")
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
    want = dict(llama3=(0, 0, 1), qwen2=(mlb.FLAG_QKV_BIAS, 0, 0), qwen3=(mlb.FLAG_QK_NORM, 32, 0))[fam]
    got = (h["flags"], h["head_dim"], h["rope_scaling"])
    ck.report(h["version"] == 2 and got == want and h["tokenizer"] and h["chat_template"]
              and (h["bos"], h["eos"], h["add_bos"]) == (1, 2, 1),
              f"{fam}: a one-file .mlb version 2: flags/head_dim/rope_scaling {got} (want {want}), "
              f"tokenizer {len(h.get('tokenizer', b''))} bytes, template, bos 1 eos 2 add_bos 1")
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
        ck.report(not same and h2["flags"] == h["flags"] and h2["head_dim"] == h["head_dim"]
                  and h2["rope_scaling"] == h["rope_scaling"],
                  f"{fam}: HF folder (rotate-halves q/k, config.json) and GGUF give the same arrays"
                  + (f"; differ: {same[:3]}" if same else ""))
    rc, _, se = convert(gg, os.path.join(tmp, "v1.mlb"), "--mlb-version", "1")
    ck.report(rc == 1 and "needs version 2" in se,
              f"{fam}: --mlb-version 1 refused, naming why: {se.strip()[-160:]}")


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


if __name__ == "__main__":
    ck.run(main)

"""Random-weight Llama GGUF files at ml_bench's model shapes, for llama-bench
(tools/bench_vs_llamacpp.py): the shapes of app/bench_shapes.h, the Llama-2
vocabulary of ../shared/models/llama2-tokenizer/tokenizer.bin, every matrix
in one type. Each is written once in F32 (normal weights scaled by
1/sqrt(cols), norms 1), turned into Q8_0 and Q4_0 by `llama-quantize --pure`
(llama.cpp's own quantizer, every 2-D tensor in the one type, like our .mlb),
and kept in the cache folder; the F32 file is deleted once both exist
(TinyLlama's is 4.4 GB). Decode speed depends on the shapes and types, not
on the values.
"""
import os
import re
import shutil
import subprocess

import numpy as np

import gguf_in
import gguf_out
import mlb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# MODELS: the folder of real models, as for make (default ../shared/models)
TOKENIZER = os.path.join(os.environ.get("MODELS", os.path.join(os.path.dirname(ROOT), "shared", "models")),
                         "llama2-tokenizer", "tokenizer.bin")
GGUF_TYPES = {"q8_0": "Q8_0", "q4_0": "Q4_0"}
_SHAPE_FIELDS = ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "vocab", "max_seq",
                 "shared_classifier")


def bench_shapes(header=os.path.join(ROOT, "app", "bench_shapes.h")):
    """{name: our header fields} of ml_bench's --shape table, read from its
    C source so the two engines always get the same shapes."""
    rows = re.findall(r'\{"(\w+)",((?:\s*\d+,?){8})\}', open(header).read())
    if not rows:
        raise ValueError(f"{header}: no shape rows found")
    return {name: dict(zip(_SHAPE_FIELDS, (int(v) for v in nums.split(","))))
            for name, nums in rows}


def write_f32(path, cfg, tokenizer=TOKENIZER, seed=1):
    """A Llama GGUF in F32 with random weights at shape cfg."""
    if not os.path.exists(tokenizer):
        raise OSError(f"{tokenizer}: no Llama-2 tokenizer there (set MODELS to the folder of "
                      "llama2-tokenizer/tokenizer.bin)")
    pieces = mlb.tokenizer_pieces_from(open(tokenizer, "rb").read(), cfg["vocab"])
    rng = np.random.default_rng(seed)

    def tensor(shape):
        if len(shape) == 1:
            return lambda: np.ones(shape, np.float32)
        return lambda: rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[1] ** -0.5)

    tensors = {gguf_in.gguf_name(name): gguf_out.Deferred(shape, tensor(shape))
               for name, shape in mlb.tensor_plan(cfg)}
    gguf_out.write_gguf(path, gguf_out.llama_meta(cfg, gguf_out.gguf_vocab(pieces)), tensors)


def f32_bytes(cfg):
    return sum(4 * int(np.prod(shape)) for _, shape in mlb.tensor_plan(cfg))


def model_files(shape, cfg, quantize_bin, folder, log):
    """{"q8_0": path, "q4_0": path} of the shape's quantized GGUF files in
    folder, written if missing (write the F32 file, quantize, delete it)."""
    out = {t: os.path.join(folder, f"{shape}-{g}.gguf") for t, g in GGUF_TYPES.items()}
    missing = [t for t, p in out.items() if not os.path.exists(p)]
    if not missing:
        return out
    os.makedirs(folder, exist_ok=True)
    need = f32_bytes(cfg) * 1.6  # the F32 file and its Q8_0 and Q4_0 copies
    free = shutil.disk_usage(folder).free
    if free < need:
        raise OSError(f"{folder}: {free / 1e9:.1f} GB free, {shape}'s GGUF files need {need / 1e9:.1f} GB")
    f32 = os.path.join(folder, f"{shape}-F32.gguf")
    log(f"writing {f32} ({f32_bytes(cfg) / 1e9:.2f} GB of random F32 weights)")
    try:
        write_f32(f32 + ".part", cfg)
        os.replace(f32 + ".part", f32)
        for t in missing:
            log(f"llama-quantize --pure {os.path.basename(f32)} -> {GGUF_TYPES[t]}")
            r = subprocess.run(["nice", "-n", "19", quantize_bin, "--pure", f32, out[t] + ".part", GGUF_TYPES[t]],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode:
                raise OSError(f"llama-quantize {GGUF_TYPES[t]} of {f32} failed:\n{r.stdout[-2000:]}")
            os.replace(out[t] + ".part", out[t])
    finally:
        for p in (f32, f32 + ".part") + tuple(p + ".part" for p in out.values()):
            if os.path.exists(p):
                os.remove(p)
    return out

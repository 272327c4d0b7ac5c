/* A GGUF file converted, in C, into a .mlb version 2 (model/mlb.h) with its
 * tokenizer embedded: the same bytes as `python3 tools/convert.py X.gguf
 * out.mlb` for what this converter takes (README, "Running a GGUF file"):
 *   architectures llama, qwen2 (q/k/v biases) and qwen3 (q/k norms), their
 *   q/k rows permuted from rotate-halves into our interleaved pairs as
 *   tools/gguf_in.py does; a SentencePiece vocabulary (tokenizer.ggml.model
 *   "llama", embedded as llama2.c's tokenizer.bin) or a byte-level BPE one
 *   ("gpt2", embedded as the tokenizer file of model/bpe.h, tools/tokfile.py's
 *   bytes; pre-tokenizers gpt-2, llama-bpe, qwen2, smollm); Llama 3's rope
 *   scaling (rope_freqs.weight checked against its parameters, which the
 *   header keeps); hidden_dim zero-padded to a multiple of 32 as convert.py
 *   does; tensor types Q8_0 and Q4_0 (copied block for block when they are
 *   the output's type, the fp16 scale bits kept), and F32, F16, BF16, Q4_1,
 *   Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (dequantized as the gguf package does, then
 *   quantized with the Python converter's rounding). The output is Q4_0 when
 *   the file has matrices of 4 bits or fewer (Q4_0, Q4_1, Q2_K, Q3_K, Q4_K)
 *   and no Q8_0 ones, else Q8_0; its block scales are fp16 (stype 1), as
 *   convert.py's --scales auto, every quantized block's scale rounded to
 *   fp16 first; fp32 when one is beyond fp16's range.
 * Anything else is ML_E_FORMAT naming it (tools/convert.py refuses it too).
 * The GGUF is only read; the .mlb is written atomically (core/outfile.h). */
#ifndef ML_GGUF_MLB_H
#define ML_GGUF_MLB_H

#include <stddef.h>

#include "core/status.h"

/* Convert gguf_path into mlb_path. */
ml_status ml_gguf_convert(const char *gguf_path, const char *mlb_path, ml_err *err);

/* The cache folder: $ML_CACHE_DIR, else $XDG_CACHE_HOME/legacy-ml, else
 * $HOME/.cache/legacy-ml (%LOCALAPPDATA%\legacy-ml on Windows). */
ml_status ml_gguf_cache_dir(char *dir, size_t cap, ml_err *err);

/* The cached .mlb of gguf_path into mlb_path, converted first unless the
 * cache holds it; before converting, on_convert(ud, gguf_path, mlb_path)
 * when non-NULL (a program says so: the conversion takes a while). The file
 * is <cache>/<name>-<16 hex>.mlb, the hex a hash of the GGUF's absolute
 * path, size and modification time (and of this converter's version), so
 * it is reused while the GGUF is unchanged. Creates the cache folder. */
ml_status ml_gguf_cached(const char *gguf_path, char *mlb_path, size_t cap,
                         void (*on_convert)(void *ud, const char *gguf_path, const char *mlb_path), void *ud,
                         ml_err *err);

/* 1 if path is a readable file that starts with the GGUF magic. */
int ml_gguf_is_file(const char *path);

#endif

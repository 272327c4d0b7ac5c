/* The tokenizer front door: one type for both kinds of vocabulary the models
 * bring, a llama2.c tokenizer.bin (SentencePiece, model/tokenizer.h, used
 * unchanged) or a byte-level BPE tokenizer file (model/bpe.h). The kind is
 * taken from the file's first bytes (the BPE file's magic "MLBP"; a
 * tokenizer.bin starts with max_token_length <= 1024, never those bytes),
 * from a path or from memory (the tokenizer a .mlb v2 file embeds).
 *
 * Like its two kinds, it allocates only at load; encode and decode only read
 * it, so one loaded tokenizer may serve several threads. */
#ifndef ML_TOK_H
#define ML_TOK_H

#include <stddef.h>

#include "core/status.h"
#include "model/bpe.h"
#include "model/tokenizer.h"

typedef enum { ML_TOK_KIND_SP = 0, ML_TOK_KIND_BPE = 1 } ml_tok_kind;

typedef struct {
    ml_tok_kind kind;
    ml_tokenizer sp; /* kind SP */
    ml_bpe bpe;      /* kind BPE */
} ml_tok;

/* Load from a file, or from size bytes at data (copied; name labels the
 * errors). vocab is the model's: either kind must have exactly that many
 * tokens (ML_E_FORMAT otherwise). On failure nothing stays allocated. */
ml_status ml_tok_load(ml_tok *t, const char *path, int vocab, ml_err *err);
ml_status ml_tok_load_buffer(ml_tok *t, const char *name, const void *data, size_t size, int vocab,
                             ml_err *err);
void ml_tok_free(ml_tok *t);

/* The tokenizer of a model: the file at path, or (path NULL) the one a .mlb
 * version 2 model embeds (bytes, len: its view; len 0: none, ML_E_ARG). */
ml_status ml_tok_load_or_embedded(ml_tok *t, const char *path, const void *bytes, size_t len, int vocab,
                                  ml_err *err);

int ml_tok_vocab(const ml_tok *t);
/* "SentencePiece (tokenizer.bin)" or "byte-level BPE (qwen2)". */
const char *ml_tok_kind_name(const ml_tok *t);

/* The special ids: -1 when the vocabulary has none. SentencePiece: BOS 1,
 * EOS 2, no end of turn. */
int ml_tok_bos(const ml_tok *t);
int ml_tok_eos(const ml_tok *t);
int ml_tok_eot(const ml_tok *t);
/* Does encode start with BOS by default (SentencePiece: yes; BPE: the
 * file's add_bos)? */
int ml_tok_add_bos(const ml_tok *t);

/* Entries the tokens buffer of ml_tok_encode needs for text. */
size_t ml_tok_max_tokens(const ml_tok *t, const char *text);

/* Encode NUL-terminated text: BOS first if bos (and the vocabulary has one),
 * EOS last if eos; special: control tokens spelled in the text (BPE:
 * "<|im_end|>") are single tokens, else they are plain text (SentencePiece
 * has none). tokens holds ml_tok_max_tokens(t, text) entries. */
ml_status ml_tok_encode(const ml_tok *t, const char *text, int bos, int eos, int special, int *tokens,
                        int *n_tokens, ml_err *err);

/* The bytes to print for token after prev, *len of them; NULL (and *len = 0)
 * for an id out of range. SentencePiece: ml_tokenizer_decode. BPE: the raw
 * bytes, possibly part of a UTF-8 character (print them through an
 * ml_utf8_stream); a control token prints nothing. */
const char *ml_tok_decode(const ml_tok *t, int prev, int token, size_t *len);

/* The token's own text, control tokens included (ml_tokenize's listing). */
const char *ml_tok_text(const ml_tok *t, int token, size_t *len);

#endif

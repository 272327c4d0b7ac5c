/* Byte-level BPE (GPT-2's scheme), the tokenizer of SmolLM2, Qwen2.5, Qwen3
 * and Llama 3: the text is cut into pieces by the family's pre-tokenizer,
 * each piece's bytes are merged by rank into tokens. Written from the
 * published split rules (no regex library; the Unicode classes come from
 * model/unicode_tables.c).
 *
 * The BPE tokenizer file (written by tools/tokfile.py), little-endian:
 *    0  char[4] magic "MLBP"
 *    4  u32 version          1
 *    8  u32 pre              pre-tokenizer: 0 gpt-2, 1 llama-bpe, 2 qwen2,
 *                            3 smollm (every number character a piece of its
 *                            own, gpt-2's rule between them: SmolLM2's
 *                            Digits + ByteLevel) (llama.cpp's tokenizer.ggml.pre names)
 *   12  u32 flags            bit 0: a piece that is itself a normal token is
 *                            that token, unmerged (HF "ignore_merges", Llama 3;
 *                            tiktoken always); bit 1: a merge's rank is its
 *                            result's id (tiktoken's rule) instead of its
 *                            position in the merge list; bit 2: the text is
 *                            normalized to NFC first (HF normalizer "NFC",
 *                            Qwen2's; model/nfc.h); other bits 0
 *   16  u32 n_tokens         1 .. ML_BPE_MAX_VOCAB
 *   20  u32 n_merges         0 .. ML_BPE_MAX_MERGES
 *   24  i32 bos   28 i32 eos   32 i32 eot (end of turn)   each -1 (none) or a token id
 *   36  u32 add_bos          0/1: encode starts with bos (then bos >= 0)
 *   40  u32 zero  44 u32 zero
 *   48  n_tokens entries, id 0, 1, 2, ...:
 *         u32 len            1 .. ML_BPE_MAX_TOKEN_LEN
 *         u32 type           ML_BPE_NORMAL .. ML_BPE_BYTE (GGUF's token types)
 *         len bytes          the token's raw bytes (NOT GPT-2's printable
 *                            byte-to-unicode form: the writer maps it back),
 *                            for a control or user-defined token its UTF-8 text
 *   then n_merges entries, in rank order:
 *         u32 left, right, result   token ids; result's bytes are left's then right's
 *   and the file ends there.
 * Every byte value must be a one-byte normal token (byte-level BPE can then
 * encode any text). Loading checks every field and bound and fails with
 * ML_E_FORMAT naming it.
 *
 * All memory is allocated by the load functions and released by ml_bpe_free;
 * encode and decode never allocate and only read the tokenizer, so one loaded
 * tokenizer may serve several threads. */
#ifndef ML_BPE_H
#define ML_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define ML_BPE_MAGIC "MLBP"
#define ML_BPE_VERSION 1
#define ML_BPE_HEADER 48
#define ML_BPE_MAX_VOCAB (1 << 22)
#define ML_BPE_MAX_MERGES (1 << 23)
#define ML_BPE_MAX_TOKEN_LEN 1024
/* The most entries ml_bpe_max_tokens says: so many ints fill the address space. */
#define ML_BPE_MAX_IDS (SIZE_MAX / sizeof(int))

enum { ML_BPE_PRE_GPT2 = 0, ML_BPE_PRE_LLAMA3 = 1, ML_BPE_PRE_QWEN2 = 2, ML_BPE_PRE_SMOLLM = 3, ML_BPE_PRE_COUNT };
enum { ML_BPE_IGNORE_MERGES = 1, ML_BPE_RANK_BY_RESULT = 2, ML_BPE_NFC = 4 };
enum {
    ML_BPE_NORMAL = 1,  /* merged from bytes by the BPE */
    ML_BPE_UNKNOWN = 2, /* never produced by encode */
    ML_BPE_CONTROL = 3, /* <|im_end|>...: matched in text only with ML_BPE_SPECIAL */
    ML_BPE_USER = 4,    /* added tokens: always matched in text as one token */
    ML_BPE_UNUSED = 5,  /* never produced by encode (padding) */
    ML_BPE_BYTE = 6     /* never produced by encode */
};
/* ml_bpe_encode's options. */
enum { ML_BPE_BOS = 1, ML_BPE_EOS = 2, ML_BPE_SPECIAL = 4 };

typedef struct {
    uint64_t key;  /* left << 32 | right; UINT64_MAX: empty slot */
    uint32_t rank; /* lower merges first */
    int32_t result;
} ml_bpe_merge;

typedef struct {
    int n_tokens, n_merges, pre;
    uint32_t flags;
    int32_t bos, eos, eot; /* -1: none */
    int add_bos;
    uint32_t *off;          /* (n_tokens + 1) token i is text[off[i] .. off[i+1]) */
    unsigned char *type;    /* (n_tokens) ML_BPE_NORMAL ... */
    unsigned char *text;    /* every token's bytes back to back */
    int32_t byte_id[256];   /* the one-byte normal token of each byte */
    ml_bpe_merge *merges;   /* (merge_mask + 1) hash table: pair -> rank, result */
    uint32_t merge_mask;
    int32_t *whole;         /* (whole_mask + 1) hash table of normal tokens' bytes -> id, -1 empty */
    uint32_t whole_mask;
    int32_t *special;       /* (n_special) control and user-defined ids, by first byte, longest first */
    int n_special;
    int32_t special_at[257]; /* specials starting with byte b: special[special_at[b] .. special_at[b+1]) */
} ml_bpe;

/* Parse a BPE tokenizer file held in memory (data, size): everything needed
 * is copied, the buffer may go after the call. name labels error messages
 * ("model.mlb's tokenizer"). On failure nothing stays allocated. */
ml_status ml_bpe_load_buffer(ml_bpe *t, const char *name, const void *data, size_t size, ml_err *err);
/* The same from the file at path (ML_E_IO when it cannot be read). */
ml_status ml_bpe_load(ml_bpe *t, const char *path, ml_err *err);
void ml_bpe_free(ml_bpe *t);

/* Does this buffer start like a BPE tokenizer file (its magic)? */
int ml_bpe_sniff(const void *data, size_t size);

/* Entries the ids buffer of ml_bpe_encode needs for len bytes of text (the
 * buffer doubles as the merge workspace and, under ML_BPE_NFC, holds the
 * normalized text; the result has at most that text's bytes + 2 ids). t
 * NULL: the most any tokenizer needs for this text. ML_BPE_MAX_IDS for text
 * too long for one encode (on a 32-bit system, tens of MB). */
size_t ml_bpe_max_tokens(const ml_bpe *t, const char *text, size_t len);
/* The same bound for text of at most bytes bytes as encoded (under nfc, the
 * ml_nfc_bound of its parts): for a caller that adds parts up
 * (ml_chat_max_tokens). */
size_t ml_bpe_max_tokens_bytes(size_t bytes, int nfc);

/* Encode len bytes of text (UTF-8; an invalid byte is a character of class
 * "other" on its own, encoded as its byte). opts: ML_BPE_BOS (bos first, if
 * the tokenizer has one), ML_BPE_EOS (eos last, likewise), ML_BPE_SPECIAL
 * (control tokens spelled in the text are single tokens; without it
 * "<|im_end|>" is plain text; user-defined tokens always are). Under
 * ML_BPE_NFC each stretch between special tokens is normalized first. ids
 * holds cap entries, cap >= ml_bpe_max_tokens(t, text, len), else ML_E_ARG.
 * *n_ids: the count. Never allocates. */
ml_status ml_bpe_encode(const ml_bpe *t, const char *text, size_t len, int opts, int *ids, size_t cap,
                        size_t *n_ids, ml_err *err);

/* The raw bytes of token id, *len of them (not NUL-terminated); NULL and
 * *len = 0 for an id outside 0 .. n_tokens - 1. */
const char *ml_bpe_token(const ml_bpe *t, int id, size_t *len);
/* The token's type (ML_BPE_NORMAL ...), 0 for an id out of range. */
int ml_bpe_type(const ml_bpe *t, int id);

/* Streaming decode: a UTF-8 character whose bytes arrive in two tokens is
 * released once, whole. Feed each token's bytes; out receives the bytes
 * ready to print (at most len + 4 of them; the return value is the count).
 * A byte that cannot start or continue a valid sequence is released as it
 * is, so no byte is ever lost or reordered. Flush at the end. */
typedef struct {
    unsigned char pend[4];
    int n;    /* bytes held */
    int need; /* bytes the held character has in all */
} ml_utf8_stream;

size_t ml_utf8_stream_feed(ml_utf8_stream *s, const char *p, size_t len, char *out);
size_t ml_utf8_stream_flush(ml_utf8_stream *s, char *out);

/* The end of the pre-tokenizer's piece that starts at byte i < n of s (the
 * split rules alone, no specials; for the tests and tools). */
size_t ml_bpe_piece_end(int pre, const char *s, size_t n, size_t i);

/* Name of a pre-tokenizer id ("gpt-2", "llama-bpe", "qwen2", "smollm"), "?" if none. */
const char *ml_bpe_pre_name(int pre);

#endif

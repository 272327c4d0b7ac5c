/* The llama2.c tokenizer: SentencePiece-style BPE with byte fallback, read
 * from a llama2.c tokenizer.bin (DESIGN §6: the runtime uses it as-is).
 *
 * tokenizer.bin, little-endian:
 *   u32 max_token_length                   longest piece, in bytes
 *   then, once per token id 0, 1, 2, ... until the end of the file:
 *     f32 score                            merge priority: higher merges first
 *     u32 len                              1 .. max_token_length
 *     len bytes                            the piece (no NUL); a space is ' '
 *   Ids 0, 1, 2 are <unk>, BOS, EOS; byte-fallback pieces are named "<0xNN>".
 *
 * All memory is allocated by ml_tokenizer_load and released by
 * ml_tokenizer_free; encode and decode never allocate and only read the
 * tokenizer, so one loaded tokenizer may serve several threads. */
#ifndef ML_TOKENIZER_H
#define ML_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define ML_TOK_UNK 0
#define ML_TOK_BOS 1
#define ML_TOK_EOS 2

#define ML_TOK_MAX_PIECE 1024      /* longest piece (and max_token_length) accepted */
#define ML_TOK_MAX_VOCAB 1048575   /* 2^20 - 1: encode packs piece ids into 20 bits */

typedef struct {
    const unsigned char *bytes; /* the piece, followed by a NUL that len does not count */
    uint32_t len;               /* bytes in the piece, >= 1 */
    int32_t id;
} ml_tok_piece;

typedef struct {
    int vocab;                      /* number of pieces (== the model's vocab) */
    int max_len;                    /* max_token_length from the file */
    float *scores;                  /* (vocab) merge priority of each piece */
    ml_tok_piece *pieces;           /* (vocab) indexed by id */
    ml_tok_piece *sorted;           /* (vocab) by bytes, then id: binary search */
    unsigned char *text;            /* every piece's bytes + NUL, back to back */
    unsigned char *pairs;           /* (256 * 256 bits) bit x*256+y: some piece has byte
                                       y right after byte x; encode splits where none does */
    int byte_id[256];               /* id of "<0xNN>" for byte NN; ML_TOK_UNK when absent */
    unsigned char byte_str[256][2]; /* byte NN as a 1-byte string, for decode */
} ml_tokenizer;

/* Read the whole tokenizer.bin at path. Its token count must equal vocab_size
 * (the model's vocab): a different count is ML_E_FORMAT, as is any malformed
 * or truncated entry; a missing or unreadable path (or a directory) is
 * ML_E_IO; vocab_size outside 1 .. ML_TOK_MAX_VOCAB is ML_E_ARG. On failure
 * nothing stays allocated and t need not be freed (freeing it is harmless). */
ml_status ml_tokenizer_load(ml_tokenizer *t, const char *path, int vocab_size, ml_err *err);
/* The same from size bytes at data (a tokenizer a .mlb file embeds); name
 * labels the errors. The bytes are copied: data may go after the call. */
ml_status ml_tokenizer_load_buffer(ml_tokenizer *t, const char *name, const void *data, size_t size,
                                   int vocab_size, ml_err *err);
void ml_tokenizer_free(ml_tokenizer *t);

/* Entries the tokens buffer of ml_tokenizer_encode needs: strlen(text) + 3. */
size_t ml_tokenizer_max_tokens(const char *text);

/* Encode UTF-8 text with llama2.c's rules: BOS (1) first if bos; if text is
 * not empty, the piece " " (SentencePiece's dummy prefix) and then one piece
 * per UTF-8 character, or one "<0xNN>" piece per byte for a character not in
 * the vocab and for every byte that is not valid UTF-8; then merge, again and
 * again, the adjacent pair whose concatenation is the highest-scoring piece
 * (the leftmost pair on a tie); EOS (2) last if eos. tokens must hold
 * ml_tokenizer_max_tokens(text) entries (the buffer doubles as the merge
 * workspace); *n_tokens receives the count. Invalid UTF-8 is not an error.
 * Time: about linear in strlen(text) for real text (20 KB: a few ms); the
 * worst case is quadratic within a stretch no vocab piece boundary splits,
 * for merges at ever-decreasing scores. */
ml_status ml_tokenizer_encode(const ml_tokenizer *t, const char *text, int bos, int eos,
                              int *tokens, int *n_tokens, ml_err *err);

/* The bytes to print for token after prev, *len of them (a NUL follows, but
 * a piece may itself contain NUL bytes: use *len). A "<0xNN>" piece gives the
 * single raw byte NN; after BOS (prev == 1) a leading space is dropped.
 * NULL (and *len = 0) for a token outside 0 .. vocab-1. */
const char *ml_tokenizer_decode(const ml_tokenizer *t, int prev, int token, size_t *len);

/* Number of pieces. */
int ml_tokenizer_vocab(const ml_tokenizer *t);

#endif

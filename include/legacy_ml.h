/* legacy_ml.h: the public API of the legacy-ml library (libml.a, libml.so).
 *
 * The one header an application includes; nothing else is exported. Every
 * name starts with lml_ / LML_. Handles are opaque; a model is used by one
 * thread at a time (two models may run in two threads at once).
 *
 *   lml_model *m;
 *   lml_error e;
 *   lml_model_options o = {0};               (zero: every default)
 *   o.tokenizer = "tokenizer.bin";
 *   if (lml_model_open(&m, "model.mlb", &o, &e)) { puts(e.message); return 1; }
 *   ...                                      (lml_tokenize, lml_generate, lml_eval)
 *   lml_model_close(m);
 *
 * Errors: a function that can fail returns an lml_status (LML_OK = 0) and,
 * when err is not NULL, writes a one-line reason into err->message
 * ("field: expected X, got Y"). Nothing here prints, exits or aborts.
 *
 * The ISA: a library is built for one instruction set (make lib ISA=avx2).
 * lml_model_open and lml_model_open_memory first check that this CPU runs
 * it and otherwise return LML_E_ISA naming the missing features; nothing
 * built for the ISA runs before that check. lml_cpu_check asks the same
 * question without a model. */
#ifndef LEGACY_ML_H
#define LEGACY_ML_H

#include <stddef.h>

#if defined(_WIN32) && defined(LML_BUILD_DLL)
#define LML_API __declspec(dllexport)
#elif defined(__GNUC__)
#define LML_API __attribute__((visibility("default")))
#else
#define LML_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------- */

typedef enum {
    LML_OK = 0,
    LML_E_IO,     /* a file missing, unreadable or short */
    LML_E_FORMAT, /* a model or tokenizer file that is malformed */
    LML_E_SHAPE,  /* dimensions the runtime cannot run */
    LML_E_NOMEM,  /* out of memory while opening */
    LML_E_ISA,    /* this CPU lacks the instruction set the library was built for */
    LML_E_ARG     /* a bad argument (NULL, out of range, no tokenizer, ...) */
} lml_status;

typedef struct {
    char message[512]; /* NUL-terminated; "" after success */
} lml_error;

/* "LML_E_FORMAT"; "LML_E_?" for an unknown code. */
LML_API const char *lml_status_name(lml_status s);

/* ---- the library ------------------------------------------------------- */

/* "0.3.0" (semantic versioning; the shared library's soname carries it). */
LML_API const char *lml_version(void);
/* The ISA the library was built for: "scalar", "sse2", ..., "avx2", "neon". */
LML_API const char *lml_build_isa(void);
/* LML_OK if this CPU (and OS) runs this library's ISA, else LML_E_ISA with
 * the missing features and the best build for this CPU in err. Safe to call
 * on any CPU of the architecture. */
LML_API lml_status lml_cpu_check(lml_error *err);

/* ---- models ------------------------------------------------------------ */

typedef struct lml_model lml_model;

/* Zero means the default for every field. */
typedef struct {
    const char *tokenizer; /* llama2.c tokenizer.bin or a byte-level BPE tokenizer file
                              (tools/tokfile.py); NULL: the one the model file embeds
                              (.mlb version 2), or none (lml_tokenize and the pieces of
                              lml_generate then need one: LML_E_ARG) */
    int no_tokenizer;      /* 1: load none at open, not even the embedded one
                              (lml_model_load_tokenizer later) */
    int threads;           /* worker threads; 0: the CPUs this process may use, at
                              most 8 (1 in a library built without threads) */
    int context;           /* cap the context (and KV cache) at this many tokens; 0: the
                              model's, at most LML_DEFAULT_CONTEXT; LML_CONTEXT_MODEL: the
                              model's whole context */
    int batch;             /* prompt tokens per forward step; 0: 128; 1: token by token.
                              Results are the same bits for every batch */
    int load;              /* how the file is held: LML_LOAD_AUTO (0: read into memory when
                              it takes at most half of the available memory, which decodes
                              faster; else mapped), LML_LOAD_MMAP, LML_LOAD_READ;
                              lml_model_open_memory also LML_LOAD_TAKE: the image
                              (writable) is handed over, and the library may rearrange
                              its weights in place into the layout this build's kernels
                              read fastest (as it does a file it reads); free it after
                              lml_model_close, or after a failed open, and do not read,
                              reuse or reopen it */
    int all_logits;        /* 1: room to pass every prompt position's logits to a
                              callback in batches (otherwise such a prompt runs token
                              by token: same logits, slower) */
} lml_model_options;

enum { LML_LOAD_AUTO = 0, LML_LOAD_MMAP = 1, LML_LOAD_READ = 2, LML_LOAD_TAKE = 3 };
/* The default context: 4096 tokens (llama.cpp's programs' default) or the
 * model's, if shorter. A model trained for 128K tokens would otherwise get
 * a KV cache of gigabytes (Llama 3.2 1B: 8 GiB), more than a small machine
 * or a 32-bit process can reserve. */
#define LML_DEFAULT_CONTEXT 4096
#define LML_CONTEXT_MODEL (-1)

/* Open a .mlb model (tools/convert.py) at path; opts may be NULL. *out is
 * NULL on failure. A GGUF file is converted once into a cached .mlb (the
 * cache folder: $ML_CACHE_DIR, else $XDG_CACHE_HOME/legacy-ml, else
 * ~/.cache/legacy-ml) and that file is opened; the first open of a large
 * GGUF takes the conversion's time. */
LML_API lml_status lml_model_open(lml_model **out, const char *path, const lml_model_options *opts,
                                  lml_error *err);
/* The same from a .mlb image in memory: data must be 64-byte aligned and stay
 * valid and unchanged until lml_model_close (the weights are used in place;
 * opts->load LML_LOAD_TAKE: handed over, see above). */
LML_API lml_status lml_model_open_memory(lml_model **out, const void *data, size_t size,
                                         const lml_model_options *opts, lml_error *err);
/* Load (or replace) the model's tokenizer: a llama2.c tokenizer.bin whose
 * token count equals the model's vocab. On failure the model keeps none. */
/* path NULL: the tokenizer the model file embeds (LML_E_ARG when it has none). */
LML_API lml_status lml_model_load_tokenizer(lml_model *m, const char *path, lml_error *err);
/* Free everything the model holds; NULL is fine. */
LML_API void lml_model_close(lml_model *m);

typedef struct {
    int vocab;          /* tokens */
    int context;        /* the context of this run (the model's, capped as opts.context says) */
    int train_context;  /* the context the model was trained for */
    int dim, n_layers, n_heads, n_kv_heads, hidden_dim;
    int threads;        /* workers actually used */
    int batch;          /* prompt tokens per forward step actually used (>= 1) */
    const char *weights;/* "Q8_0" or "Q4_0" */
    const char *storage;/* how the file is held: "mapped", "read", ... */
    size_t weight_bytes;/* bytes of the file the weights occupy */
    size_t arena_bytes; /* run buffers, KV cache included */
    size_t kv_bytes;    /* the KV cache */
    size_t decode_bytes;/* weight bytes one decode step reads: every matrix, one embedding row */
    /* the family's shape (.mlb version 2: Qwen2, Qwen3, Llama 3) */
    int file_version;   /* the .mlb version: 1 or 2 */
    int head_dim;       /* per head (dim / n_heads unless the file sets it) */
    int qkv_bias;       /* 1: q/k/v biases (Qwen2) */
    int qk_norm;        /* 1: q/k head norms (Qwen3) */
    const char *rope_scaling; /* "none" or "llama3" */
    int embeds_tokenizer; /* 1: the file holds its tokenizer (used without options.tokenizer) */
    size_t chat_template_bytes; /* the embedded chat template's size; 0: none */
    /* the loaded tokenizer (all 0 and tokenizer NULL without one) */
    const char *tokenizer; /* its kind: "SentencePiece (tokenizer.bin)", "byte-level BPE (...)" */
    int bos, eos, eot;  /* special ids; -1: the vocabulary has none */
    int add_bos;        /* 1: a prompt starts with bos (pass it to lml_tokenize) */
    int byte_level;     /* 1: byte-level BPE: a piece may be part of a UTF-8 character */
    int f16_scales;     /* 1: the weights' block scales are fp16 (.mlb version 2, stype 1), 0: fp32 */
} lml_model_info;

LML_API void lml_model_get_info(const lml_model *m, lml_model_info *info);

/* ---- tokens ------------------------------------------------------------ */

#define LML_TOKEN_BOS 1 /* begin of sequence (SentencePiece; lml_model_info.bos in general) */
#define LML_TOKEN_EOS 2 /* end of sequence (SentencePiece; lml_model_info.eos in general) */

/* Entries the tokens buffer of lml_tokenize needs for text, enough for any
 * tokenizer: 10 * strlen(text) + 16 for text that is surely its own NFC
 * (ASCII, and most text: no combining marks); other text may need up to
 * 10.25 entries a byte of its canonical decomposition (at most 3 bytes a
 * byte; a code point never counted at fewer bytes than its own) + 17, a
 * tokenizer that normalizes to NFC (Qwen2's) holding the normalized text
 * there. Text too long to encode at all (on a 32-bit system, about 90 MB)
 * gets SIZE_MAX / sizeof(int), which no allocation gives. */
LML_API size_t lml_tokenize_capacity(const char *text);
/* Encode UTF-8 text (BOS first if add_bos and the vocabulary has one;
 * lml_model_info.add_bos is the tokenizer's own rule) into tokens[0..*n_tokens).
 * capacity below what the model's tokenizer may need for text is LML_E_ARG
 * (the buffer is also the encoder's workspace): lml_tokenize_capacity(text)
 * is always enough (SentencePiece needs strlen(text) + 3, byte-level BPE
 * more). Invalid UTF-8 is encoded byte by byte. */
LML_API lml_status lml_tokenize(const lml_model *m, const char *text, int add_bos, int *tokens,
                                size_t capacity, int *n_tokens, lml_error *err);
/* The bytes of token when it follows prev (streaming-safe: a piece depends
 * on the previous token only, e.g. the leading space after BOS is dropped;
 * prev < 0: no previous token). *len bytes (a piece may hold a NUL, or one
 * byte of a UTF-8 sequence that later pieces complete); valid while the
 * model is open. NULL and *len 0 for a token outside the vocab or without
 * a tokenizer. A byte-level BPE piece may be part of a UTF-8 character:
 * print pieces through an lml_utf8_state. */
LML_API const char *lml_token_piece(const lml_model *m, int prev, int token, size_t *len);
/* The most bytes lml_token_piece returns for a byte-level model (lml_model_info.byte_level):
 * LML_PIECE_MAX + 4 bytes of out always hold what lml_utf8_feed releases for such a piece. */
#define LML_PIECE_MAX 1024
/* lml_tokenize, except that a control token spelled in text ("<|im_end|>") is
 * that one token, as in a template's own text (ml_tokenize --special). Never
 * for a user's text: it could end a turn (lml_chat_render encodes messages as
 * plain text). */
LML_API lml_status lml_tokenize_special(const lml_model *m, const char *text, int add_bos, int *tokens,
                                        size_t capacity, int *n_tokens, lml_error *err);
/* The token's own text as the vocabulary holds it, control tokens spelled out
 * ("<|im_end|>", SentencePiece's "<s>"); *len bytes, valid while the model is
 * open. NULL and *len 0 for a token outside the vocab or without a tokenizer. */
LML_API const char *lml_token_text(const lml_model *m, int token, size_t *len);

/* Streaming UTF-8: a character whose bytes arrive in two pieces is released
 * once, whole. Start zeroed; feed each piece, out receives the bytes ready
 * (at most len + 4; the count is returned); flush at the end (at most 4).
 * A byte that cannot start or continue a character is released as it is. */
typedef struct {
    unsigned char pend[4];
    int n, need;
} lml_utf8_state;
LML_API size_t lml_utf8_feed(lml_utf8_state *st, const char *piece, size_t len, char *out);
LML_API size_t lml_utf8_flush(lml_utf8_state *st, char *out);

/* ---- running ----------------------------------------------------------- */

/* Receives the logits of position pos (vocab floats, valid during the call).
 * Returns 0 to go on; nonzero stops the run (see lml_eval, lml_generate). */
typedef int (*lml_logits_fn)(void *ud, int pos, const float *logits, int vocab);

/* Run tokens[0..n) at positions pos0 .. pos0+n-1 (their keys and values go
 * into the cache; a later call continues at pos0+n, or starts again at 0).
 * each, if not NULL, receives every position's logits in order; when it
 * returns nonzero, lml_eval stops there and returns that value as its status
 * (err: "stopped by the logits callback"). Afterwards lml_logits holds the
 * last position's. */
LML_API lml_status lml_eval(lml_model *m, const int *tokens, int n, int pos0, lml_logits_fn each,
                            void *ud, lml_error *err);
/* The logits of the last position run (vocab floats), overwritten by the
 * next lml_eval or lml_generate. */
LML_API const float *lml_logits(const lml_model *m);

typedef struct {
    float temperature;    /* >= 0; 0: greedy */
    float top_p;          /* in [0, 1]; 0 or 1: off */
    int top_k;            /* >= 0; 0: off */
    float min_p;          /* in [0, 1]; 0: off */
    float repeat_penalty; /* > 0; 1: off */
    int repeat_last_n;    /* the penalty's window in tokens; 0: off; -1: the context */
    unsigned long long seed; /* the same seed, the same text, on every build */
} lml_sampler_options;

/* ml_run's defaults: temperature 1, top_p 0.9, the filters off, window 64,
 * seed 0 (give your own). */
LML_API lml_sampler_options lml_sampler_defaults(void);

/* A sampler of one's own, for a program that runs the model with lml_eval
 * and picks the tokens itself (a chat that keeps its cache across turns):
 * lml_generate's sampling code and RNG, so the same options, the same
 * tokens accepted and the same logits give the same draws.
 *
 *   lml_sampler *s;
 *   lml_sampler_open(&s, m, &so, &e);         (so.seed: the draws' seed)
 *   lml_eval(m, ids, n, pos, NULL, NULL, &e);
 *   for (i = 0; i < n; i++) lml_sampler_accept(s, ids[i]);
 *   int next = lml_sample(s, lml_logits(m)); (accept it when it is run)
 *   lml_sampler_close(s);
 *
 * One thread at a time; it does not hold the model. */
typedef struct lml_sampler lml_sampler;

/* A sampler for m's vocab and context; opts NULL: lml_sampler_defaults().
 * Bad options: LML_E_ARG (lml_generate's rules). Allocates (the handle, its
 * scratch); sampling does not. *out is NULL on failure. */
LML_API lml_status lml_sampler_open(lml_sampler **out, const lml_model *m, const lml_sampler_options *opts,
                                    lml_error *err);
/* NULL is fine. */
LML_API void lml_sampler_close(lml_sampler *s);
/* Record a token of the text, in order (the prompt's, then each sampled one
 * that is run): the repeat penalty's window. An id outside the vocabulary
 * is ignored. */
LML_API void lml_sampler_accept(lml_sampler *s, int token);
/* The next token for logits (vocab floats, e.g. lml_logits(m); left as they
 * are); -1 for a NULL argument. It is not accepted. */
LML_API int lml_sample(lml_sampler *s, const float *logits);

typedef struct {
    /* Each token after the first, with its piece (lml_token_piece of it
     * after the one before): first the prompt's own tokens (once the prompt
     * has run), then the sampled ones; piece NULL without a tokenizer.
     * Nonzero stops the generation: at once after a sampled token, after the
     * first sampled one during the prompt's. A sampled BOS or EOS ends the
     * generation without reaching here. Optional. */
    int (*on_token)(void *ud, int token, const char *piece, size_t len);
    /* Once the prompt has run, before the first sampled token. Optional. */
    void (*on_prompt_done)(void *ud, int n_prompt);
    /* Every position's logits before sampling; nonzero stops the generation
     * after the next sampled token. Optional. */
    lml_logits_fn on_logits;
    void *ud;
} lml_callbacks;

/* Run prompt[0..n_prompt) (normally BOS first) from position 0, then sample
 * token by token until a sampled stop token, a stop from on_token, or
 * `steps` positions (prompt included; 1 <= n_prompt <= steps <= context).
 * sampler NULL: lml_sampler_defaults(). *n_pos (may be NULL): positions run.
 * With speculation set (lml_model_speculate) the tokens, logits and
 * callbacks are the same; only the speed changes. */
LML_API lml_status lml_generate(lml_model *m, const int *prompt, int n_prompt, int steps,
                                const lml_sampler_options *sampler, const lml_callbacks *cb,
                                int *n_pos, lml_error *err);

/* The tokens that end m's lml_generate when sampled (such a token reaches no
 * callback and is not run): ids[0..n), 1 <= n <= LML_MAX_STOP_TOKENS, each in
 * the vocab. n 0: the default again (a byte-level vocabulary's end of text
 * and end of turn; SentencePiece's BOS and EOS). Kept until the next call. A
 * chat's reply stops at lml_chat_end_of_turn (and the model's EOS and EOT). */
#define LML_MAX_STOP_TOKENS 4
LML_API lml_status lml_model_set_stop_tokens(lml_model *m, const int *ids, int n, lml_error *err);

/* Speculative decoding for m's lml_generate: n_draft (1 .. 64) drafted
 * tokens per step at most, from prompt lookup (draft NULL) or from the draft
 * model (same vocabulary, context >= m's; it must stay open while set).
 * m must be opened with all_logits and a batch >= n_draft + 1. When the
 * draft's tokenizer was given (its options.tokenizer), its pieces must be m's.
 * n_draft 0 turns it off. Allocates (call it after opening, not per run). */
LML_API lml_status lml_model_speculate(lml_model *m, int n_draft, lml_model *draft, lml_error *err);
/* Speculation's counters so far: drafts checked, drafts accepted, model steps. */
LML_API void lml_speculation_stats(const lml_model *m, long *drafted, long *accepted, long *steps);

/* ---- chat ------------------------------------------------------------ */

/* A chat template: a conversation (system, user and assistant messages) as
 * the ids an Instruct model was trained on. The templates of the families
 * we run, written out (no Jinja engine): "chatml" (SmolLM2, Qwen2.5/Qwen3),
 * "llama3", "zephyr" (TinyLlama-Chat), "llama2" ([INST]), "deepseek-r1"
 * (DeepSeek-R1's Qwen and Llama distills). Control tokens
 * (<|im_start|>, <|eot_id|>, BOS, EOS ...) are inserted by id; every text
 * between them, the messages included, is encoded as plain text, so a
 * message that spells "<|im_end|>" cannot end a turn.
 *
 *   lml_chat *c;
 *   if (lml_chat_open(&c, m, NULL, 0, &e)) { puts(e.message); ... }  (the model's own template)
 *   lml_chat_message msgs[] = {{LML_ROLE_SYSTEM, "Be brief."}, {LML_ROLE_USER, "Hi!"}};
 *   int ids[4096], n, stop[1] = {lml_chat_end_of_turn(c)};
 *   lml_chat_render(c, msgs, 2, LML_CHAT_ADD_GENERATION_PROMPT, ids, 4096, &n, &e);
 *   lml_model_set_stop_tokens(m, stop, 1, &e);
 *   lml_generate(m, ids, n, ...);                                    (the assistant's reply)
 *   lml_chat_close(c);
 *
 * A chat uses its model's tokenizer: close it before the model, and before
 * lml_model_load_tokenizer. One thread at a time (it holds a text buffer). */
typedef struct lml_chat lml_chat;

typedef enum { LML_ROLE_SYSTEM = 0, LML_ROLE_USER, LML_ROLE_ASSISTANT } lml_role;

typedef struct {
    lml_role role;
    const char *content; /* NUL-terminated UTF-8 */
} lml_chat_message;

/* "chatml, llama3, zephyr, llama2, deepseek-r1": the names lml_chat_open takes. */
LML_API const char *lml_chat_template_names(void);
/* A chat over m's tokenizer. name: a template by name (an unknown one is
 * LML_E_ARG listing the names), or NULL: the model's own chat_template
 * (.mlb version 2) recognized (LML_E_FORMAT when it is none of ours; LML_E_ARG
 * when the model carries none). When the model's own template is of the
 * chosen kind and writes out a default system message (Qwen2.5, SmolLM2),
 * a conversation that does not start with a system message gets it, as in
 * Hugging Face's rendering; Llama 3.1 and 3.2's knowledge and "today" dates
 * open every conversation (the template's fallback date, where Hugging Face
 * writes today's for 3.2). A template whose control tokens the vocabulary
 * lacks is LML_E_FORMAT naming the token. max_text: the most bytes
 * of text between two control tokens (a message and its template text);
 * 0: 65536; above 2^30: LML_E_ARG. Allocates (the handle, a text buffer); rendering does not. *out
 * is NULL on failure. */
LML_API lml_status lml_chat_open(lml_chat **out, const lml_model *m, const char *name, size_t max_text,
                                 lml_error *err);
/* The template lml_chat_open(m, name) would take, without opening it (its
 * name in *chosen when chosen is not NULL), and its refusals of name or of
 * the model's own template; m needs no tokenizer, and may be NULL when name
 * is given (the name alone is checked). */
LML_API lml_status lml_chat_choose(const lml_model *m, const char *name, const char **chosen, lml_error *err);
/* NULL is fine. */
LML_API void lml_chat_close(lml_chat *c);
/* The template's name ("chatml"); NULL for NULL. */
LML_API const char *lml_chat_name(const lml_chat *c);
/* The id that ends an assistant's turn (<|im_end|>, <|eot_id|>, EOS): stop
 * generation there (lml_model_set_stop_tokens); -1 for NULL. */
LML_API int lml_chat_end_of_turn(const lml_chat *c);

/* flags of lml_chat_render (other bits: LML_E_ARG) */
#define LML_CHAT_ADD_GENERATION_PROMPT 1 /* end with the assistant's header: the reply follows */
/* A terminal chat's next turn, after an assistant's reply sampled up to
 * lml_chat_end_of_turn and run without it: what closes that reply (its end
 * of turn first), then msgs without the conversation's start (BOS); msgs:
 * one user message. With LML_CHAT_ADD_GENERATION_PROMPT. */
#define LML_CHAT_AFTER_REPLY 2

/* Entries the tokens buffer of lml_chat_render needs for msgs[0..n) (an
 * upper bound, the encoder's workspace included); 0 for a NULL argument. */
LML_API size_t lml_chat_capacity(const lml_chat *c, const lml_chat_message *msgs, int n);
/* The conversation msgs[0..n) as ids, tokens[0..*n_tokens): the start (BOS
 * where the template has one), each message, and with
 * LML_CHAT_ADD_GENERATION_PROMPT the assistant's header. Too little capacity,
 * a text run longer than max_text, a bad role or a NULL content: LML_E_ARG. */
LML_API lml_status lml_chat_render(lml_chat *c, const lml_chat_message *msgs, int n, int flags, int *tokens,
                                   size_t capacity, int *n_tokens, lml_error *err);

#ifdef __cplusplus
}
#endif

#endif

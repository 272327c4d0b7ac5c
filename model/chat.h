/* Chat templates: a conversation (system, user and assistant messages) as
 * the token ids an Instruct model was trained on. Five families, written
 * out by hand (no Jinja engine): ChatML (SmolLM2, Qwen2.5/Qwen3), Llama 3,
 * Zephyr (TinyLlama-Chat), Llama 2's [INST] and DeepSeek-R1's (its Qwen and
 * Llama distills: <｜User｜>, <｜Assistant｜>). A model's own chat_template
 * string (GGUF tokenizer.chat_template, HF tokenizer_config.json) is
 * recognized by distinctive substrings; a name chooses one directly.
 *
 * Control tokens (<|im_start|>, <|eot_id|>, BOS, EOS ...) are inserted by
 * id; every text between them, the messages included, is encoded as plain
 * text (specials off), so a message that spells "<|im_end|>" cannot end a
 * turn. The text runs between two control tokens are encoded whole (template
 * text and message together), as a tokenizer would see the formatted prompt.
 * A SentencePiece vocabulary puts its dummy-prefix space before each run.
 *
 * Llama 3 trims each message's content of white space (its template's
 * "| trim"; llama.cpp's too); Llama 2 strips what it puts in an [INST] (a
 * system text keeps its own, the user's after it does not) and each reply
 * (its template's ".strip()"). White space here is ASCII's: Python's strip
 * also takes Unicode spaces, llama.cpp's does not. DeepSeek-R1 writes the
 * conversation's last system message right after BOS (no header) and of a
 * past reply only what follows its last "</think>".
 *
 * A render is the concatenation of its parts, so a conversation can be fed
 * turn by turn: ml_chat_render_turn (start, system, user, the assistant's
 * header), the sampled reply, ml_chat_render_reply_end, the next turn ...
 * gives exactly the ids ml_chat_render gives for the whole conversation when
 * the reply's ids are its text's encoding (for Llama 3: of its trimmed text;
 * for Llama 2: of a space and its trimmed text, as "[/INST] reply </s>" has
 * it: the generation prompt ends at "[/INST]", so the model writes that space).
 * DeepSeek-R1 is the exception: its whole render drops what the model
 * thought (the "<think>\n" of the generation prompt and the reply up to its
 * "</think>"), which a chat fed turn by turn keeps in its cache, as
 * llama.cpp's llama-cli does.
 *
 * ml_chat_init allocates a text buffer (text_cap bytes: the longest run of
 * text between two control tokens); rendering allocates nothing. */
#ifndef ML_CHAT_H
#define ML_CHAT_H

#include <stddef.h>

#include "core/status.h"
#include "model/tok.h"

typedef enum {
    ML_CHAT_CHATML = 0,
    ML_CHAT_LLAMA3,
    ML_CHAT_ZEPHYR,
    ML_CHAT_LLAMA2,
    ML_CHAT_DEEPSEEK_R1,
    ML_CHAT_COUNT
} ml_chat_kind;
typedef enum { ML_CHAT_SYSTEM = 0, ML_CHAT_USER, ML_CHAT_ASSISTANT } ml_chat_role;

typedef struct {
    ml_chat_role role;
    const char *content; /* NUL-terminated UTF-8 */
} ml_chat_msg;

#define ML_CHAT_MAX_CTL 4
/* The largest text buffer (text_cap) a chat takes: 1 GiB. */
#define ML_CHAT_MAX_TEXT (1 << 30)

typedef struct {
    ml_chat_kind kind;
    const ml_tok *tok;
    int bos;                  /* -1: none; put first when add_bos */
    int add_bos;
    int ctl[ML_CHAT_MAX_CTL]; /* the template's control tokens, by id (ml_chat.c lists them) */
    int stop;                 /* the end of an assistant turn: generation stops here */
    char *text;               /* (text_cap) the run of text being built */
    size_t text_cap, text_n;
    char *default_system;     /* the system message a conversation without one gets; NULL: none */
    int think;                /* DeepSeek-R1: the generation prompt opens the reply's "<think>\n" */
    char *system_prefix;      /* the text that opens every system message (Llama 3.1+); NULL: none */
} ml_chat;

/* "chatml, llama3, zephyr, llama2, deepseek-r1": the names, for messages. */
const char *ml_chat_names(void);
const char *ml_chat_name(ml_chat_kind k);
/* By name; an unknown one is ML_E_ARG with the names listed. */
ml_status ml_chat_kind_from_name(const char *name, ml_chat_kind *k, ml_err *err);
/* From a model's chat_template text (len bytes, no NUL needed: the .mlb v2
 * section is a view into the file); none recognized is ML_E_FORMAT with the
 * names listed (choose one by name). */
ml_status ml_chat_kind_detect(const char *tmpl, size_t len, ml_chat_kind *k, ml_err *err);
/* The kind a program uses: name (--chat-template) when given, else the
 * model's template (len 0: none, ML_E_ARG asking for a name). */
ml_status ml_chat_kind_choose(const char *name, const char *tmpl, size_t len, ml_chat_kind *k, ml_err *err);

/* The template kind over tokenizer tok. bos, eos, eot: the model's special
 * ids (.mlb v2 header), -1 to take the tokenizer's own; add_bos: -1 the
 * tokenizer's rule, else 0/1. A control token the vocabulary lacks is
 * ML_E_FORMAT naming it. text_cap: bytes of the text buffer (>= 64). */
ml_status ml_chat_init(ml_chat *c, ml_chat_kind kind, const ml_tok *tok, int bos, int eos, int eot,
                       int add_bos, size_t text_cap, ml_err *err);
void ml_chat_free(ml_chat *c);
/* What the model's own template tmpl (len bytes, its Jinja text) writes
 * out besides the messages, when it is of c's kind, as Hugging Face renders
 * it (ml_chat_render and ml_chat_render_turn do the same):
 *  - ChatML: a literal "<|im_start|>system\n...<|im_end|>" is the default
 *    system message of a conversation that does not start with one
 *    (Qwen2.5's "You are Qwen, created by Alibaba Cloud. ...", SmolLM2's
 *    "You are a helpful AI assistant named SmolLM, ...");
 *  - Llama 3.1 and later: every conversation opens with a system message
 *    "Cutting Knowledge Date: December 2023\nToday Date: D\n\n", then the
 *    conversation's own system message, trimmed. D is the template's own
 *    fallback date ("26 Jul 2024"), not today's (Hugging Face writes
 *    today's for 3.2): a prompt gives the same ids every day;
 *  - DeepSeek-R1: whether the generation prompt ends "<think>\n" (the
 *    templates since February 2025; without a template, it does).
 * None found: nothing changes. Allocates its copies (ML_E_NOMEM). */
ml_status ml_chat_use_template_defaults(ml_chat *c, const char *tmpl, size_t len, ml_err *err);

/* The id of the token whose text is exactly text (control tokens too); -1
 * if none. A linear scan: for set-up, not per token. */
int ml_chat_find_token(const ml_tok *tok, const char *text);

/* Ids the tokens buffer must hold to render these messages (an upper bound). */
size_t ml_chat_max_tokens(const ml_chat *c, const ml_chat_msg *msgs, int n);

/* The whole conversation msgs[0..n): the start (BOS), each message, and
 * with add_gen the assistant's header (the generation prompt). tokens has
 * cap entries (ml_chat_max_tokens); *n_tokens the count. Too little room or
 * a text run longer than text_cap: ML_E_ARG. */
ml_status ml_chat_render(ml_chat *c, const ml_chat_msg *msgs, int n, int add_gen, int *tokens, size_t cap,
                         size_t *n_tokens, ml_err *err);

/* One turn of a terminal chat: with first, the start and the system
 * message (system may be NULL); then the user's message and the assistant's
 * header. */
ml_status ml_chat_render_turn(ml_chat *c, int first, const char *system, const char *user, int *tokens,
                              size_t cap, size_t *n_tokens, ml_err *err);
/* What closes an assistant message after its text (its stop token first,
 * which generation samples but does not feed). */
ml_status ml_chat_render_reply_end(ml_chat *c, int *tokens, size_t cap, size_t *n_tokens, ml_err *err);

#endif

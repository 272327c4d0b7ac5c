#include "model/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/nfc.h"

/* ---- the templates: names, recognition, control tokens ------------------- */

static const char *const names[ML_CHAT_COUNT] = {"chatml", "llama3", "zephyr", "llama2", "deepseek-r1"};

/* DeepSeek-R1's control tokens: <｜User｜>, <｜Assistant｜>, <｜end▁of▁sentence｜>
 * (U+FF5C FULLWIDTH VERTICAL LINE, U+2581 LOWER ONE EIGHTH BLOCK). */
#define R1_BAR "\xef\xbd\x9c"
#define R1_USER "<" R1_BAR "User" R1_BAR ">"
#define R1_ASSISTANT "<" R1_BAR "Assistant" R1_BAR ">"
#define R1_EOS "<" R1_BAR "end\xe2\x96\x81of\xe2\x96\x81sentence" R1_BAR ">"

/* Each template's control tokens by text, in ml_chat.ctl order, and which
 * of them ends an assistant turn. "<s>" and "</s>" are the model's BOS and
 * EOS ids (a llama2.c tokenizer.bin spells them "\n<s>\n"). */
typedef struct {
    const char *ctl[ML_CHAT_MAX_CTL];
    int stop; /* index into ctl */
} tmpl_tokens;

static const tmpl_tokens tmpl[ML_CHAT_COUNT] = {
    [ML_CHAT_CHATML] = {{"<|im_start|>", "<|im_end|>"}, 1},
    [ML_CHAT_LLAMA3] = {{"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, 2},
    [ML_CHAT_ZEPHYR] = {{"</s>"}, 0},
    [ML_CHAT_LLAMA2] = {{"</s>", "<s>"}, 0},
    [ML_CHAT_DEEPSEEK_R1] = {{R1_USER, R1_ASSISTANT, R1_EOS}, 2},
};

const char *ml_chat_names(void) { return "chatml, llama3, zephyr, llama2, deepseek-r1"; }

const char *ml_chat_name(ml_chat_kind k) { return (unsigned)k < ML_CHAT_COUNT ? names[k] : "?"; }

ml_status ml_chat_kind_from_name(const char *name, ml_chat_kind *k, ml_err *err) {
    for (int i = 0; i < ML_CHAT_COUNT; i++)
        if (name && !strcmp(name, names[i])) {
            *k = (ml_chat_kind)i;
            return ML_OK;
        }
    return ml_errf(err, ML_E_ARG, "unknown chat template '%s'; the templates: %s", name ? name : "(null)",
                   ml_chat_names());
}

/* Where s (NUL-terminated) first occurs in t (len bytes), or NULL. */
static const char *find(const char *t, size_t len, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (t[i] == s[0] && !memcmp(t + i, s, n)) return t + i;
    return NULL;
}

/* Does t (len bytes) contain the string s? */
static int has(const char *t, size_t len, const char *s) { return find(t, len, s) != NULL; }

/* Distinctive pieces of each family's Jinja text; the first match wins
 * (Llama 3's headers before ChatML, whose <|im_start|> no other uses). */
ml_status ml_chat_kind_detect(const char *t, size_t len, ml_chat_kind *k, ml_err *err) {
    if (!t || !len) return ml_errf(err, ML_E_FORMAT, "no chat template; choose one of: %s", ml_chat_names());
    if (has(t, len, "<|start_header_id|>") && has(t, len, "<|eot_id|>")) *k = ML_CHAT_LLAMA3;
    else if (has(t, len, "<|im_start|>")) *k = ML_CHAT_CHATML;
    else if (has(t, len, "<|user|>") && has(t, len, "<|assistant|>")) *k = ML_CHAT_ZEPHYR;
    else if (has(t, len, "[INST]")) *k = ML_CHAT_LLAMA2;
    else if (has(t, len, R1_USER) && has(t, len, R1_ASSISTANT)) *k = ML_CHAT_DEEPSEEK_R1;
    else
        return ml_errf(err, ML_E_FORMAT, "chat template not recognized (not one of: %s); choose one by name",
                       ml_chat_names());
    return ML_OK;
}

ml_status ml_chat_kind_choose(const char *name, const char *tmpl, size_t len, ml_chat_kind *k, ml_err *err) {
    if (name) return ml_chat_kind_from_name(name, k, err);
    if (!len) return ml_errf(err, ML_E_ARG, "the model carries no chat template; choose one of: %s", ml_chat_names());
    return ml_chat_kind_detect(tmpl, len, k, err);
}

int ml_chat_find_token(const ml_tok *tok, const char *text) {
    size_t want = strlen(text);
    for (int id = 0, n = ml_tok_vocab(tok); id < n; id++) {
        size_t len = 0;
        const char *p = ml_tok_text(tok, id, &len);
        if (p && len == want && !memcmp(p, text, len)) return id;
    }
    return -1;
}

ml_status ml_chat_init(ml_chat *c, ml_chat_kind kind, const ml_tok *tok, int bos, int eos, int eot, int add_bos,
                       size_t text_cap, ml_err *err) {
    memset(c, 0, sizeof *c);
    if ((unsigned)kind >= ML_CHAT_COUNT || !tok)
        return ml_errf(err, ML_E_ARG, "chat template: bad kind or tokenizer");
    if (text_cap < 64 || text_cap > ML_CHAT_MAX_TEXT)
        return ml_errf(err, ML_E_ARG, "chat template: the text buffer must hold 64 .. %d bytes, not %zu", ML_CHAT_MAX_TEXT,
                       text_cap);
    c->kind = kind;
    c->tok = tok;
    c->bos = bos >= 0 ? bos : ml_tok_bos(tok);
    c->add_bos = add_bos >= 0 ? add_bos : ml_tok_add_bos(tok);
    if (eos < 0) eos = ml_tok_eos(tok);
    if (eot < 0) eot = ml_tok_eot(tok);
    for (int i = 0; i < ML_CHAT_MAX_CTL; i++) {
        const char *name = tmpl[kind].ctl[i];
        c->ctl[i] = -1;
        if (!name) continue;
        int id = !strcmp(name, "<s>") ? c->bos : !strcmp(name, "</s>") ? eos : -1;
        if (id < 0) id = ml_chat_find_token(tok, name);
        /* The model's own end of turn, when it names this token. */
        if (id < 0 && eot >= 0) {
            size_t len = 0;
            const char *p = ml_tok_text(tok, eot, &len);
            if (p && len == strlen(name) && !memcmp(p, name, len)) id = eot;
        }
        if (id < 0)
            return ml_errf(err, ML_E_FORMAT, "chat template %s needs the control token %s, which this %s vocabulary "
                           "(%d tokens) lacks", names[kind], name, ml_tok_kind_name(tok), ml_tok_vocab(tok));
        c->ctl[i] = id;
    }
    c->stop = c->ctl[tmpl[kind].stop];
    c->think = kind == ML_CHAT_DEEPSEEK_R1; /* what DeepSeek recommends; a template says otherwise */
    if (!(c->text = malloc(text_cap + 1))) return ml_errf(err, ML_E_NOMEM, "chat template: out of memory");
    c->text_cap = text_cap;
    return ML_OK;
}

void ml_chat_free(ml_chat *c) {
    free(c->text);
    free(c->default_system);
    free(c->system_prefix);
    c->text = c->default_system = c->system_prefix = NULL;
}

/* The longest default system message taken from a template. */
#define ML_CHAT_MAX_DEFAULT 4096

/* A ChatML template's default system message: the text of a Jinja string
 * literal "<|im_start|>system\n" TEXT "<|im_end|>", where the newline is
 * the escape \n or a real one and TEXT is plain (no quote, no Jinja, no
 * concatenation: the branch that writes messages[0]['content'] has those).
 * The first such literal; *n 0 when there is none. */
static const char *chatml_default_system(const char *t, size_t len, size_t *n) {
    static const char open[] = "<|im_start|>system", close[] = "<|im_end|>";
    const size_t lo = sizeof open - 1, lc = sizeof close - 1;
    for (const char *p = t; (p = find(p, len - (size_t)(p - t), open)); p++) {
        const size_t i = (size_t)(p - t);
        size_t j = i + lo;
        if (j + 2 <= len && t[j] == '\\' && t[j + 1] == 'n') j += 2;
        else if (j < len && t[j] == '\n') j += 1;
        else continue;
        /* inside a quoted literal, braces are text (Qwen2.5-Math's "\\boxed{}")
         * and so is the other quote ("You're"): the literal ends at its own
         * quote, an escape skipped; in raw template text, no Jinja at all */
        const char q = i > 0 && (t[i - 1] == '\'' || t[i - 1] == '"') ? t[i - 1] : 0;
        size_t k = j;
        while (k + lc <= len && memcmp(t + k, close, lc) && (q ? t[k] != q : !strchr("'\"{}+", t[k])))
            k += q && t[k] == '\\' && k + 1 < len ? 2 : 1;
        if (k + lc <= len && k > j && k - j <= ML_CHAT_MAX_DEFAULT && !memcmp(t + k, close, lc)) {
            *n = k - j;
            return t + j;
        }
    }
    *n = 0;
    return NULL;
}

/* The text at t (n bytes) of a Jinja string literal, its escapes \n, \t,
 * \\, \' and \" undone (any other stays as written), in a new string. */
static char *jinja_unescape(const char *t, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (ch == '\\' && i + 1 < n && strchr("nt\\'\"", t[i + 1])) ch = t[++i] == 'n' ? '\n' : t[i] == 't' ? '\t' : t[i];
        d[o++] = ch;
    }
    d[o] = 0;
    return d;
}

/* Llama 3.1+'s system prefix, "Cutting Knowledge Date: K\nToday Date:
 * D\n\n": K the template's literal after "Cutting Knowledge Date: " up to
 * its newline (escaped or real), D its fallback date_string literal. 0 when
 * the template writes no such literal (Llama 3.0 writes none). */
static int llama3_prefix(const char *t, size_t len, const char **k, int *kn, char *date, size_t date_cap) {
    static const char know[] = "Cutting Knowledge Date: ";
    const char *p = find(t, len, know), *end = t + len;
    if (!p) return 0;
    const char *q = p += sizeof know - 1;
    while (q < end && *q != '\n' && *q != '\\' && !strchr("'\"{}+", *q)) q++;
    if (q == p || q - p > 64 || q == end || (*q == '\\' && (q + 1 == end || q[1] != 'n'))) return 0;
    *k = p, *kn = (int)(q - p);
    snprintf(date, date_cap, "26 Jul 2024"); /* Llama 3.1's and 3.2's fallback, if the literal is not found */
    /* the first assignment of a literal: Llama 3.2 assigns strftime_now(...) before it */
    static const char assign[] = "date_string = ";
    for (const char *d = find(t, len, assign); d; d = find(d, (size_t)(end - d), assign)) {
        d += sizeof assign - 1;
        if (d == end || (*d != '"' && *d != '\'')) continue;
        const char *e = d + 1;
        while (e < end && *e != *d && (size_t)(e - d) < date_cap) e++;
        if (e < end && *e == *d && e > d + 1) {
            snprintf(date, date_cap, "%.*s", (int)(e - d - 1), d + 1);
            break;
        }
    }
    return 1;
}

ml_status ml_chat_use_template_defaults(ml_chat *c, const char *tmpl, size_t len, ml_err *err) {
    ml_chat_kind own;
    ml_err ignored = {{0}};
    if (!tmpl || !len || ml_chat_kind_detect(tmpl, len, &own, &ignored) != ML_OK || own != c->kind) return ML_OK;
    const char *k;
    int kn;
    char date[32];
    if (c->kind == ML_CHAT_CHATML) {
        size_t n = 0;
        const char *text = chatml_default_system(tmpl, len, &n);
        if (text && !(c->default_system = jinja_unescape(text, n)))
            return ml_errf(err, ML_E_NOMEM, "chat template: out of memory for its default system message");
    } else if (c->kind == ML_CHAT_DEEPSEEK_R1) {
        c->think = has(tmpl, len, R1_ASSISTANT "<think>");
    } else if (c->kind == ML_CHAT_LLAMA3 && llama3_prefix(tmpl, len, &k, &kn, date, sizeof date)) {
        const size_t cap = (size_t)kn + sizeof date + 64;
        if (!(c->system_prefix = malloc(cap)))
            return ml_errf(err, ML_E_NOMEM, "chat template: out of memory for its system prefix");
        snprintf(c->system_prefix, cap, "Cutting Knowledge Date: %.*s\nToday Date: %s\n\n", kn, k, date);
    }
    /* The text buffer holds a message of text_cap bytes with its template
     * text (ml_chat_init): the template's own text comes on top. */
    const char *added = c->default_system ? c->default_system : c->system_prefix;
    if (added) {
        const size_t cap = c->text_cap + strlen(added) + 16;
        char *bigger = realloc(c->text, cap + 1);
        if (!bigger) return ml_errf(err, ML_E_NOMEM, "chat template: out of memory for its text buffer");
        c->text = bigger;
        c->text_cap = cap;
    }
    return ML_OK;
}

/* ---- the builder: text runs and control ids into the caller's buffer ------ */

typedef struct {
    ml_chat *c;
    int *tokens;
    size_t cap, n;
    ml_status st; /* the first failure; later calls do nothing */
    ml_err *err;
} builder;

/* Entries ml_tok_encode needs for text (its workspace included). */
static size_t enc_need(const ml_tok *t, const char *text, size_t len) {
    return t->kind != ML_TOK_KIND_BPE ? len + 3 : ml_bpe_max_tokens(&t->bpe, text, len);
}

static int enc_nfc(const ml_tok *t) { return t->kind == ML_TOK_KIND_BPE && (t->bpe.flags & ML_BPE_NFC); }

/* The bytes s may take in the encoder: under NFC, its ml_nfc_bound. */
static size_t enc_bytes(const ml_tok *t, const char *s) {
    size_t len = strlen(s);
    return enc_nfc(t) ? ml_nfc_bound((const unsigned char *)s, len) : len;
}

static void put_text_n(builder *b, const char *s, size_t len) {
    if (b->st) return;
    if (len > b->c->text_cap - b->c->text_n) {
        b->st = ml_errf(b->err, ML_E_ARG, "chat: a message of %zu bytes is longer than the %zu the chat was set up for",
                        len, b->c->text_cap);
        return;
    }
    memcpy(b->c->text + b->c->text_n, s, len);
    b->c->text_n += len;
}

static void put_text(builder *b, const char *s) { put_text_n(b, s, strlen(s)); }

/* The length of s without the white space after it (ASCII's). */
static size_t rstrip_len(const char *s) {
    size_t len = strlen(s);
    while (len && strchr(" \t\n\r\f\v", s[len - 1])) len--;
    return len;
}

/* s without the white space after it, and before it when lead (Jinja's
 * trim and Python's strip on ASCII text) */
static void put_stripped(builder *b, const char *s, int lead) {
    size_t len = rstrip_len(s);
    while (lead && len && strchr(" \t\n\r\f\v", *s)) s++, len--;
    put_text_n(b, s, len);
}

static void put_trimmed(builder *b, const char *s) { put_stripped(b, s, 1); }

static void flush_text(builder *b) {
    ml_chat *c = b->c;
    if (b->st || !c->text_n) return;
    c->text[c->text_n] = 0;
    size_t need = enc_need(c->tok, c->text, c->text_n);
    int k = 0;
    if (b->cap - b->n < need)
        b->st = ml_errf(b->err, ML_E_ARG, "chat: %zu bytes of text need %zu token entries, %zu left", c->text_n, need,
                        b->cap - b->n);
    else
        b->st = ml_tok_encode(c->tok, c->text, 0, 0, 0, b->tokens + b->n, &k, b->err);
    b->n += (size_t)k;
    c->text_n = 0;
}

static void put_id(builder *b, int id) {
    flush_text(b);
    if (b->st || id < 0) return;
    if (b->n >= b->cap) {
        b->st = ml_errf(b->err, ML_E_ARG, "chat: more than %zu tokens", b->cap);
        return;
    }
    b->tokens[b->n++] = id;
}

static ml_status finish(builder *b, size_t *n_tokens) {
    flush_text(b);
    b->c->text_n = 0;
    *n_tokens = b->st ? 0 : b->n;
    return b->st;
}

/* ---- the parts of a conversation ------------------------------------------- */

static const char *role_name(ml_chat_role r) {
    return r == ML_CHAT_SYSTEM ? "system" : r == ML_CHAT_USER ? "user" : "assistant";
}

static void put_start(builder *b) {
    const ml_chat *c = b->c;
    if (c->kind != ML_CHAT_LLAMA2 && c->add_bos && c->bos >= 0) put_id(b, c->bos);
}

/* DeepSeek-R1: the conversation's last system message, right after BOS. */
static void put_r1_system(builder *b, const ml_chat_msg *msgs, int n) {
    const char *system = NULL;
    for (int i = 0; i < n; i++)
        if (msgs[i].role == ML_CHAT_SYSTEM) system = msgs[i].content;
    if (system) put_text(b, system);
}

static void put_header(builder *b, ml_chat_role r) {
    const int *ctl = b->c->ctl;
    switch (b->c->kind) {
    case ML_CHAT_CHATML:
        put_id(b, ctl[0]);
        put_text(b, role_name(r));
        put_text(b, "\n");
        break;
    case ML_CHAT_LLAMA3:
        put_id(b, ctl[0]);
        put_text(b, role_name(r));
        put_id(b, ctl[1]);
        put_text(b, "\n\n");
        break;
    case ML_CHAT_ZEPHYR:
        put_text(b, r == ML_CHAT_SYSTEM ? "<|system|>\n" : r == ML_CHAT_USER ? "<|user|>\n" : "<|assistant|>\n");
        break;
    case ML_CHAT_DEEPSEEK_R1: /* the system text has none (put_r1_system) */
        if (r != ML_CHAT_SYSTEM) put_id(b, ctl[r == ML_CHAT_USER ? 0 : 1]);
        break;
    default: /* Llama 2: no header (the user's [INST] opens with BOS) */
        break;
    }
}

/* The generation prompt: the assistant's header; DeepSeek-R1's opens the
 * reply's thinking too. */
static void put_gen_prompt(builder *b) {
    put_header(b, ML_CHAT_ASSISTANT);
    if (b->c->kind == ML_CHAT_DEEPSEEK_R1 && b->c->think) put_text(b, "<think>\n");
}

static void put_end(builder *b, ml_chat_role r) {
    const int *ctl = b->c->ctl;
    switch (b->c->kind) {
    case ML_CHAT_CHATML: put_id(b, ctl[1]); put_text(b, "\n"); break;
    case ML_CHAT_LLAMA3: put_id(b, ctl[2]); break;
    case ML_CHAT_ZEPHYR: put_id(b, ctl[0]); put_text(b, "\n"); break;
    case ML_CHAT_DEEPSEEK_R1:
        if (r == ML_CHAT_ASSISTANT) put_id(b, ctl[2]);
        break;
    default:
        if (r == ML_CHAT_ASSISTANT) {
            put_text(b, " ");
            put_id(b, ctl[0]);
        }
        break;
    }
}

/* Llama 2 has no system turn: the system text opens the next [INST]. Its
 * template strips what goes between "[INST] " and " [/INST]": a system text
 * keeps its own white space, the user's after it goes, and with a user
 * message of white space only, so does the blank line before it. */
static void put_llama2_user(builder *b, const char *system, const char *user) {
    put_id(b, b->c->ctl[1]);
    put_text(b, "[INST] ");
    if (system) {
        put_text(b, "<<SYS>>\n");
        put_text(b, system);
        put_text(b, rstrip_len(user) ? "\n<</SYS>>\n\n" : "\n<</SYS>>");
    }
    put_stripped(b, user, !system);
    put_text(b, " [/INST]");
}

/* DeepSeek-R1's past reply: what follows its last "</think>". */
static const char *after_thinking(const char *s) {
    for (const char *p = strstr(s, "</think>"); p; p = strstr(p + 1, "</think>")) s = p + 8;
    return s;
}

static void put_msg(builder *b, const ml_chat_msg *msgs, int i) {
    const ml_chat_msg *m = &msgs[i];
    const ml_chat_kind kind = b->c->kind;
    if (kind == ML_CHAT_LLAMA2 && m->role != ML_CHAT_ASSISTANT) {
        if (m->role == ML_CHAT_USER)
            put_llama2_user(b, i > 0 && msgs[i - 1].role == ML_CHAT_SYSTEM ? msgs[i - 1].content : NULL, m->content);
        return;
    }
    if (kind == ML_CHAT_DEEPSEEK_R1 && m->role == ML_CHAT_SYSTEM) return; /* put_r1_system wrote it */
    put_header(b, m->role);
    if (kind == ML_CHAT_LLAMA2) put_text(b, " "); /* "[/INST] reply </s>" */
    if (kind == ML_CHAT_LLAMA3 || kind == ML_CHAT_LLAMA2) put_trimmed(b, m->content);
    else if (kind == ML_CHAT_DEEPSEEK_R1 && m->role == ML_CHAT_ASSISTANT) put_text(b, after_thinking(m->content));
    else put_text(b, m->content);
    put_end(b, m->role);
}

/* What opens a conversation after its start (ml_chat_use_template_defaults):
 * the system prefix around the conversation's own first system message, or
 * the default system message where it has none. How many messages of the
 * conversation it took: 1 when it wrote the first. */
static int put_template_system(builder *b, const ml_chat_msg *first) {
    const ml_chat *c = b->c;
    const int own = first && first->role == ML_CHAT_SYSTEM;
    if (c->system_prefix) {
        put_header(b, ML_CHAT_SYSTEM);
        put_text(b, c->system_prefix);
        if (own) put_trimmed(b, first->content);
        put_end(b, ML_CHAT_SYSTEM);
        return own;
    }
    /* no messages, no default: Qwen2's and SmolLM2's templates write it at
     * the loop's first message, Qwen2.5's fails on messages[0] */
    if (c->default_system && first && !own) {
        const ml_chat_msg m = {ML_CHAT_SYSTEM, c->default_system};
        put_msg(b, &m, 0);
    }
    return 0;
}

size_t ml_chat_max_tokens(const ml_chat *c, const ml_chat_msg *msgs, int n) {
    const ml_tok *t = c->tok;
    size_t len = 64 + (c->default_system ? enc_bytes(t, c->default_system) + 64 : 0) +
                 (c->system_prefix ? enc_bytes(t, c->system_prefix) + 64 : 0);
    for (int i = 0; i < n; i++) len += enc_bytes(t, msgs[i].content) + 64;
    size_t need = t->kind != ML_TOK_KIND_BPE ? len + 3 : ml_bpe_max_tokens_bytes(len, enc_nfc(t)),
           ids = 16 * ((size_t)n + 1); /* the control ids */
    return need >= ML_BPE_MAX_IDS - ids ? ML_BPE_MAX_IDS : need + ids;
}

ml_status ml_chat_render(ml_chat *c, const ml_chat_msg *msgs, int n, int add_gen, int *tokens, size_t cap,
                         size_t *n_tokens, ml_err *err) {
    /* Llama 2 puts a system message inside the next user turn's [INST]:
     * one anywhere else would be dropped without a word. */
    if (c->kind == ML_CHAT_LLAMA2)
        for (int i = 0; i < n; i++)
            if (msgs[i].role == ML_CHAT_SYSTEM && (i + 1 >= n || msgs[i + 1].role != ML_CHAT_USER))
                return ml_errf(err, ML_E_ARG, "chat template llama2: a system message (message %d) must come right "
                               "before a user message", i + 1);
    builder b = {.c = c, .tokens = tokens, .cap = cap, .err = err};
    c->text_n = 0;
    put_start(&b);
    if (c->kind == ML_CHAT_DEEPSEEK_R1) put_r1_system(&b, msgs, n);
    for (int i = put_template_system(&b, n ? msgs : NULL); i < n; i++) put_msg(&b, msgs, i);
    if (add_gen) put_gen_prompt(&b);
    return finish(&b, n_tokens);
}

ml_status ml_chat_render_turn(ml_chat *c, int first, const char *system, const char *user, int *tokens, size_t cap,
                              size_t *n_tokens, ml_err *err) {
    ml_chat_msg msgs[2] = {{ML_CHAT_SYSTEM, system}, {ML_CHAT_USER, user}};
    builder b = {.c = c, .tokens = tokens, .cap = cap, .err = err};
    c->text_n = 0;
    int with_system = first && system;
    int i = 0;
    if (first) {
        put_start(&b);
        if (c->kind == ML_CHAT_DEEPSEEK_R1) put_r1_system(&b, msgs + !with_system, 1 + with_system);
        i = put_template_system(&b, msgs + !with_system);
    }
    for (; i < 1 + with_system; i++) put_msg(&b, msgs + !with_system, i);
    put_gen_prompt(&b);
    return finish(&b, n_tokens);
}

ml_status ml_chat_render_reply_end(ml_chat *c, int *tokens, size_t cap, size_t *n_tokens, ml_err *err) {
    builder b = {.c = c, .tokens = tokens, .cap = cap, .err = err};
    c->text_n = 0;
    put_end(&b, ML_CHAT_ASSISTANT);
    return finish(&b, n_tokens);
}

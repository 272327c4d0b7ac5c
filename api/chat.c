/* include/legacy_ml.h's chat templates over model/chat.h. lml_chat_open
 * allocates (the handle and the template's text buffer); rendering allocates
 * nothing, so a server renders every request in the buffers of its start. */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#include "api/api.h"
#include "model/chat.h"

#define API_CHAT_DEFAULT_TEXT 65536 /* lml_chat_open's max_text 0 */

struct lml_chat {
    ml_chat c;
};

/* The messages are passed to model/chat.c as they are. */
_Static_assert((int)LML_ROLE_SYSTEM == (int)ML_CHAT_SYSTEM && (int)LML_ROLE_USER == (int)ML_CHAT_USER &&
                   (int)LML_ROLE_ASSISTANT == (int)ML_CHAT_ASSISTANT,
               "lml_role mirrors ml_chat_role");
_Static_assert(sizeof(lml_chat_message) == sizeof(ml_chat_msg) && sizeof(lml_role) == sizeof(ml_chat_role) &&
                   offsetof(lml_chat_message, content) == offsetof(ml_chat_msg, content),
               "lml_chat_message mirrors ml_chat_msg");

const char *lml_chat_template_names(void) { return ml_chat_names(); }

lml_status lml_chat_choose(const lml_model *m, const char *name, const char **chosen, lml_error *err) {
    if (chosen) *chosen = NULL;
    if (!m && !name) return ml_api_fail(err, ML_E_ARG, "chat: expected a model or a template name, got NULL");
    ml_err e = {{0}};
    ml_chat_kind kind;
    ml_status s = m ? ml_chat_kind_choose(name, (const char *)m->m.chat_template.data, m->m.chat_template.len, &kind, &e)
                    : ml_chat_kind_from_name(name, &kind, &e);
    if (!s && chosen) *chosen = ml_chat_name(kind);
    return ml_api_error(err, &e, s);
}

lml_status lml_chat_open(lml_chat **out, const lml_model *m, const char *name, size_t max_text, lml_error *err) {
    if (out) *out = NULL;
    if (!out || !m) return ml_api_fail(err, ML_E_ARG, "chat: expected a place for the handle and a model, got NULL");
    if (!m->has_tok) return ml_api_fail(err, ML_E_ARG, "chat: the model has no tokenizer (lml_model_options.tokenizer; Python: tokenizer=)");
    ml_err e = {{0}};
    ml_chat_kind kind;
    ml_status s = ml_chat_kind_choose(name, (const char *)m->m.chat_template.data, m->m.chat_template.len, &kind, &e);
    if (s) return ml_api_error(err, &e, s);
    lml_chat *h = calloc(1, sizeof *h);
    if (!h) return ml_api_fail(err, ML_E_NOMEM, "chat: out of memory for the handle");
    if (!max_text) max_text = API_CHAT_DEFAULT_TEXT;
    s = ml_chat_init(&h->c, kind, &m->tok, -1, -1, -1, -1, max_text < 64 ? 64 : max_text, &e);
    if (!s) s = ml_chat_use_template_defaults(&h->c, (const char *)m->m.chat_template.data, m->m.chat_template.len, &e);
    if (s) {
        lml_chat_close(h);
        return ml_api_error(err, &e, s);
    }
    *out = h;
    return ml_api_error(err, NULL, ML_OK);
}

void lml_chat_close(lml_chat *c) {
    if (!c) return;
    ml_chat_free(&c->c);
    free(c);
}

const char *lml_chat_name(const lml_chat *c) { return c ? ml_chat_name(c->c.kind) : NULL; }

int lml_chat_end_of_turn(const lml_chat *c) { return c ? c->c.stop : -1; }

/* NULL: the messages are fine; else why not. */
static const char *bad_messages(const lml_chat_message *msgs, int n) {
    if (n < 0 || (n && !msgs)) return "chat: expected n >= 0 messages, got a NULL array or n < 0";
    for (int i = 0; i < n; i++) {
        if ((unsigned)msgs[i].role > LML_ROLE_ASSISTANT) return "chat: a message's role is not system, user or assistant";
        if (!msgs[i].content) return "chat: a message's content is NULL";
    }
    return NULL;
}

size_t lml_chat_capacity(const lml_chat *c, const lml_chat_message *msgs, int n) {
    if (!c || bad_messages(msgs, n)) return 0;
    return ml_chat_max_tokens(&c->c, (const ml_chat_msg *)(const void *)msgs, n);
}

lml_status lml_chat_render(lml_chat *c, const lml_chat_message *msgs, int n, int flags, int *tokens,
                           size_t capacity, int *n_tokens, lml_error *err) {
    if (n_tokens) *n_tokens = 0;
    if (!c || !tokens || !n_tokens)
        return ml_api_fail(err, ML_E_ARG, "chat: expected a chat and the token buffers, got NULL");
    const char *why = bad_messages(msgs, n);
    if (why) return ml_api_fail(err, ML_E_ARG, why);
    if (flags & ~(LML_CHAT_ADD_GENERATION_PROMPT | LML_CHAT_AFTER_REPLY))
        return ml_api_fail(err, ML_E_ARG,
                           "chat: flags: expected LML_CHAT_ADD_GENERATION_PROMPT, LML_CHAT_AFTER_REPLY or 0");
    int after = (flags & LML_CHAT_AFTER_REPLY) != 0;
    if (after && (flags != (LML_CHAT_AFTER_REPLY | LML_CHAT_ADD_GENERATION_PROMPT) || n != 1 ||
                  msgs[0].role != LML_ROLE_USER))
        return ml_api_fail(err, ML_E_ARG,
                           "chat: LML_CHAT_AFTER_REPLY: expected one user message and LML_CHAT_ADD_GENERATION_PROMPT");
    if (capacity > INT_MAX) capacity = INT_MAX; /* the count is an int */
    ml_err e = {{0}};
    size_t got = 0, end = 0;
    /* The reply's end and the turn are rendered apart, as ml_run --chat always has. */
    ml_status s = after ? ml_chat_render_reply_end(&c->c, tokens, capacity, &end, &e) : ML_OK;
    if (!s && after) {
        s = ml_chat_render_turn(&c->c, 0, NULL, msgs[0].content, tokens + end, capacity - end, &got, &e);
        got += end;
    } else if (!s) {
        s = ml_chat_render(&c->c, (const ml_chat_msg *)(const void *)msgs, n,
                           (flags & LML_CHAT_ADD_GENERATION_PROMPT) != 0, tokens, capacity, &got, &e);
    }
    if (!s) *n_tokens = (int)got;
    return ml_api_error(err, &e, s);
}

/* ml_run --chat. Each turn renders only its new tokens (the previous
 * reply's end, the user's message, the assistant's header) and prefills
 * them in one batch after what the KV cache already holds; the reply is
 * sampled token by token and streamed until the template's end of turn.
 *
 * Context full: the chat says so on stderr and ends (exit code 1); it
 * never drops earlier turns silently. Ctrl-C (SIGINT) during a reply ends
 * that reply; at the prompt it ends the chat. End of input ends it too
 * (exit code 0), so a pipe of questions works. */
#include "app/chat.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/tok.h"

/* ---- options: ours out of argv, the rest is ml_run's ------------------------ */

typedef struct {
    const char *system, *template_name;
} chat_opts;

int ml_chat_wanted(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--chat")) return 1;
    return 0;
}

/* Moves --chat, --system X and --chat-template X out of argv (into co);
 * returns the new argc, or -1 with msg for a missing value. */
static int take_chat_args(int argc, char **argv, chat_opts *co, char *msg, size_t msg_size) {
    int n = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int system = !strcmp(a, "--system"), tmpl = !strcmp(a, "--chat-template");
        if (!strcmp(a, "--chat")) continue;
        if (system || tmpl) {
            if (i + 1 >= argc) {
                snprintf(msg, msg_size, "%s needs a value", a);
                return -1;
            }
            *(system ? &co->system : &co->template_name) = argv[++i];
            continue;
        }
        argv[n++] = argv[i];
    }
    return n;
}

/* ---- Ctrl-C: ends the reply, or the chat at the prompt ---------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
#ifdef _WIN32
    signal(SIGINT, on_sigint); /* the CRT resets the handler before calling it: the next Ctrl-C too */
#endif
    interrupted = 1;
}

static void catch_sigint(void) {
#ifdef _WIN32
    signal(SIGINT, on_sigint);
#else
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: a read at the prompt returns */
#endif
}

/* One line of stdin without its newline (the caller frees it); NULL at the
 * end of input, on an error or when interrupted. */
static char *read_line(void) {
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    int c;
    if (!buf) return NULL;
    while (!interrupted && (c = fgetc(stdin)) != EOF && c != '\n') {
        if (n + 2 > cap) {
            char *bigger = cap > ((size_t)64 << 20) ? NULL : realloc(buf, cap * 2);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
        buf[n++] = (char)c;
    }
    if (interrupted || (n == 0 && (feof(stdin) || ferror(stdin)))) {
        free(buf);
        return NULL;
    }
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = 0;
    return buf;
}

/* ---- the reply ---------------------------------------------------------------- */

typedef struct {
    ml_model *m;
    ml_tok *tok;
    ml_chat *chat;
    ml_sampler smp;
    int pos;         /* positions the KV cache holds */
    int last;        /* the last token fed */
    int max_reply;   /* tokens per reply (-n), or the context */
    int n_reply;     /* tokens of the last reply (all of them fed) */
    int stop[3], n_stop;
} chat_state;

static void print_piece(const char *p, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r') putchar(c);
    }
    fflush(stdout);
}

static int is_stop(const chat_state *cs, int t) {
    for (int i = 0; i < cs->n_stop; i++)
        if (t == cs->stop[i]) return 1;
    return 0;
}

/* Feed n tokens after the cache. */
static ml_status feed(chat_state *cs, const int *t, int n, ml_err *err) {
    if (n <= 0) return ML_OK;
    ml_status s = ml_forward_batch(cs->m, t, n, cs->pos, NULL, NULL, err);
    if (s) return s;
    for (int i = 0; i < n; i++) ml_sampler_accept(&cs->smp, t[i]);
    cs->pos += n;
    cs->last = t[n - 1];
    return ML_OK;
}

/* Sample and stream the reply. Returns 1 when the context is full. */
static int reply(chat_state *cs, ml_status *s, ml_err *err) {
    ml_utf8_stream utf8;
    memset(&utf8, 0, sizeof utf8);
    char whole[ML_BPE_MAX_TOKEN_LEN + 8];
    int full = 0;
    cs->n_reply = 0;
    for (int n = 0; n < cs->max_reply && !interrupted; n++) {
        int next = ml_sample(&cs->smp, cs->m->s.logits);
        if (is_stop(cs, next)) break;
        size_t len = 0;
        const char *piece = ml_tok_decode(cs->tok, cs->last, next, &len);
        if (piece && cs->tok->kind == ML_TOK_KIND_BPE) {
            len = ml_utf8_stream_feed(&utf8, piece, len, whole);
            piece = whole;
        }
        if (piece) print_piece(piece, len);
        if (cs->pos >= cs->m->cfg.max_seq) {
            full = 1;
            break;
        }
        if ((*s = feed(cs, &next, 1, err))) break;
        cs->n_reply++;
    }
    char rest[8];
    print_piece(rest, ml_utf8_stream_flush(&utf8, rest));
    printf("\n");
    fflush(stdout);
    return full;
}

/* ---- main ------------------------------------------------------------------------ */

static int fail(const char *what, ml_status s, const ml_err *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name(s), err->msg);
    return ML_EXIT_FAIL;
}

int ml_chat_main(int argc, char **argv) {
    chat_opts co = {0};
    char msg[512];
    ml_run_opts o;
    argc = take_chat_args(argc, argv, &co, msg, sizeof msg);
    int rc = argc < 0 ? ML_EXIT_USAGE : ml_run_parse_args(argc, argv, &o, msg, sizeof msg);
    if (rc != ML_CLI_RUN) {
        if (rc == ML_EXIT_USAGE) fprintf(stderr, "ml_run --chat: %s (ml_run -h lists the options)\n", msg);
        return rc == ML_EXIT_OK ? ML_EXIT_USAGE : rc;
    }
    if (*o.prompt || o.prompt_file || o.logits_path || o.ids_path || o.n_stops) {
        fprintf(stderr, "ml_run --chat: the messages come from stdin; -i, -f, --stop, --logits and --ids do not apply\n");
        return ML_EXIT_USAGE;
    }
    ml_err err = {{0}};
    ml_chat_kind kind;
    ml_status s;
    if (co.template_name && (s = ml_chat_kind_from_name(co.template_name, &kind, &err))) {
        fprintf(stderr, "ml_run --chat: %s (--chat-template NAME)\n", err.msg);
        return ML_EXIT_USAGE;
    }

    ml_model m;
    ml_tok tok;
    ml_chat chat;
    ml_open_opts oo = {.use_mmap = o.use_mmap, .max_seq = (int)o.context, .n_threads = (int)o.threads,
                       .batch = (int)o.batch, .all_logits = 0};
    if ((s = ml_model_open(&m, o.model, &oo, &err))) return fail("loading the model", s, &err);
    /* The model's own template (.mlb v2) unless --chat-template names one. */
    if ((s = ml_chat_kind_choose(co.template_name, (const char *)m.chat_template.data, m.chat_template.len, &kind,
                                 &err))) {
        ml_model_close(&m);
        fprintf(stderr, "ml_run --chat: %s (--chat-template NAME)\n", err.msg);
        return ML_EXIT_USAGE;
    }
    if ((s = ml_tok_load_or_embedded(&tok, o.tokenizer, m.tokenizer.data, m.tokenizer.len, m.cfg.vocab, &err))) {
        ml_model_close(&m);
        return fail("loading the tokenizer", s, &err);
    }
    if ((s = ml_chat_init(&chat, kind, &tok, -1, -1, -1, -1, (size_t)1 << 20, &err))) {
        ml_tok_free(&tok);
        ml_model_close(&m);
        return fail("setting up the chat template", s, &err);
    }
    chat_state cs = {.m = &m, .tok = &tok, .chat = &chat};
    cs.max_reply = o.steps > 0 ? (int)o.steps : m.cfg.max_seq;
    cs.stop[cs.n_stop++] = chat.stop;
    if (ml_tok_eos(&tok) >= 0 && ml_tok_eos(&tok) != chat.stop) cs.stop[cs.n_stop++] = ml_tok_eos(&tok);
    if (ml_tok_eot(&tok) >= 0 && ml_tok_eot(&tok) != chat.stop) cs.stop[cs.n_stop++] = ml_tok_eot(&tok);
    unsigned long long seed = o.seed ? o.seed : (unsigned long long)time(NULL);
    ml_sampler_init(&cs.smp, m.cfg.vocab, (float)o.temperature, (float)o.topp, seed, m.s.sampler_scratch);
    rc = ML_EXIT_OK;
    if ((s = ml_sampler_set_filters(&cs.smp, (int)o.top_k, (float)o.min_p, (float)o.repeat_penalty,
                                    (int)o.repeat_last_n, m.cfg.max_seq, &err))) {
        rc = fail("setting up the sampler", s, &err);
        goto done;
    }
    fprintf(stderr, "ml_run --chat: %s build, template %s, context %d tokens; end with Ctrl-D (Ctrl-C stops a reply)\n",
            ML_ISA_NAME, ml_chat_name(kind), m.cfg.max_seq);
    catch_sigint();

    int *buf = NULL;
    for (int first = 1;; first = 0) {
        printf("> ");
        fflush(stdout);
        interrupted = 0;
        char *line = read_line();
        if (!line) {
            printf("\n");
            break;
        }
        ml_chat_msg um = {ML_CHAT_USER, line};
        size_t cap = ml_chat_max_tokens(&chat, &um, 1) + (co.system ? ml_tok_max_tokens(&tok, co.system) + 64 : 0);
        int *bigger = realloc(buf, (cap + 16) * sizeof *buf);
        if (!bigger) {
            free(line);
            fprintf(stderr, "ml_run --chat: out of memory for the turn\n");
            rc = ML_EXIT_FAIL;
            break;
        }
        buf = bigger;
        /* The previous reply's end (its stop token was sampled, not fed), then the turn. */
        size_t n_end = 0, n_turn = 0;
        s = first ? ML_OK : ml_chat_render_reply_end(&chat, buf, cap + 16, &n_end, &err);
        if (!s) s = ml_chat_render_turn(&chat, first, co.system, line, buf + n_end, cap + 16 - n_end, &n_turn, &err);
        free(line);
        if (s) {
            rc = fail("rendering the turn", s, &err);
            break;
        }
        size_t n_new = n_end + n_turn;
        /* One position must stay free for the reply's first token. */
        if ((size_t)cs.pos + n_new + 1 > (size_t)m.cfg.max_seq) {
            fprintf(stderr, "ml_run --chat: context full: this turn needs %zu tokens, %d of %d are left; the chat ends "
                    "here (start again, or give a larger -c)\n", n_new, m.cfg.max_seq - cs.pos, m.cfg.max_seq);
            rc = ML_EXIT_FAIL;
            break;
        }
        double t0 = ml_cli_now();
        if ((s = feed(&cs, buf, (int)n_new, &err))) {
            rc = fail("prefilling the turn", s, &err);
            break;
        }
        double t1 = ml_cli_now();
        fprintf(stderr, "[prefill: %zu new tokens in %.1f ms, %d in the cache]\n", n_new, (t1 - t0) * 1e3, cs.pos);
        int full = reply(&cs, &s, &err);
        if (s) {
            rc = fail("generating", s, &err);
            break;
        }
        if (interrupted) fprintf(stderr, "[reply stopped after %d tokens]\n", cs.n_reply);
        if (full) {
            fprintf(stderr, "ml_run --chat: context full (%d tokens): the reply was cut there and the chat ends "
                    "(start again, or give a larger -c)\n", m.cfg.max_seq);
            rc = ML_EXIT_FAIL;
            break;
        }
    }
    free(buf);
done:
    ml_chat_free(&chat);
    ml_tok_free(&tok);
    ml_model_close(&m);
    return rc;
}

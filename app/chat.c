/* ml_run --chat. Each turn renders only its new tokens (the previous
 * reply's end, the user's message, the assistant's header) and prefills
 * them in one batch after what the KV cache already holds; the reply is
 * sampled token by token and streamed until the template's end of turn.
 *
 * Context full: the chat says so on stderr and ends (exit code 1); it
 * never drops earlier turns silently. Ctrl-C (SIGINT) during a reply ends
 * that reply; at the prompt it ends the chat. End of input ends it too
 * (exit code 0), so a pipe of questions works.
 *
 * Built on include/legacy_ml.h only: lml_chat_render (LML_CHAT_AFTER_REPLY
 * for each turn after the first), lml_eval at the running position, and an
 * lml_sampler of its own (the draws of lml_generate and ml_run). */
#include "app/chat.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "core/status.h"
#include "include/legacy_ml.h"

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

/* restart 0 at the prompt: a read there returns, and Ctrl-C ends the chat.
 * restart 1 everywhere else: a write interrupted while the terminal holds
 * the output back (Ctrl-S, a slow link) goes on, where without SA_RESTART
 * it failed with EINTR and stdio dropped the piece it held. */
static void catch_sigint(int restart) {
#ifdef _WIN32
    (void)restart;
    signal(SIGINT, on_sigint);
#else
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
#endif
}

/* One line of stdin without its newline (the caller frees it); NULL at the
 * end of input, on an error or when interrupted. *has_nul: the line holds a
 * NUL byte (not text: a C string would end there). */
static char *read_line(int *has_nul) {
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    int c;
    *has_nul = 0;
    if (!buf) return NULL;
    while (!interrupted && (c = fgetc(stdin)) != EOF && c != '\n') {
        *has_nul |= c == 0;
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
    lml_model *m;
    lml_sampler *smp;
    int context;     /* positions the KV cache has room for */
    int byte_level;  /* byte-level BPE: pieces go through a UTF-8 stream */
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
static lml_status feed(chat_state *cs, const int *t, int n, lml_error *err) {
    if (n <= 0) return LML_OK;
    lml_status s = lml_eval(cs->m, t, n, cs->pos, NULL, NULL, err);
    if (s) return s;
    for (int i = 0; i < n; i++) lml_sampler_accept(cs->smp, t[i]);
    cs->pos += n;
    cs->last = t[n - 1];
    return LML_OK;
}

/* Sample and stream the reply. Returns 1 when the context is full. */
static int reply(chat_state *cs, lml_status *s, lml_error *err) {
    lml_utf8_state utf8;
    memset(&utf8, 0, sizeof utf8);
    char whole[LML_PIECE_MAX + 8];
    int full = 0;
    cs->n_reply = 0;
    for (int n = 0; n < cs->max_reply && !interrupted; n++) {
        int next = lml_sample(cs->smp, lml_logits(cs->m));
        if (is_stop(cs, next)) break;
        size_t len = 0;
        const char *piece = lml_token_piece(cs->m, cs->last, next, &len);
        if (piece && cs->byte_level) {
            len = lml_utf8_feed(&utf8, piece, len, whole);
            piece = whole;
        }
        if (piece) print_piece(piece, len);
        if (cs->pos >= cs->context) {
            full = 1;
            break;
        }
        if ((*s = feed(cs, &next, 1, err))) break;
        cs->n_reply++;
    }
    char rest[8];
    print_piece(rest, lml_utf8_flush(&utf8, rest));
    printf("\n");
    fflush(stdout);
    return full;
}

/* ---- main ------------------------------------------------------------------------ */

/* The library's statuses are model/'s (ML_E_FORMAT: the name ml_run prints). */
static int fail(const char *what, lml_status s, const lml_error *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name((ml_status)s), err->message);
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
    if (o.lookup || o.draft_model || o.draft || o.draft_tokenizer) {
        fprintf(stderr, "ml_run --chat: --lookup, --draft-model, --draft and --draft-tokenizer do not apply (a chat "
                        "decodes token by token)\n");
        return ML_EXIT_USAGE;
    }
    lml_error err = {{0}};
    lml_status s;
    if (co.template_name && (s = lml_chat_choose(NULL, co.template_name, NULL, &err))) {
        fprintf(stderr, "ml_run --chat: %s (--chat-template NAME)\n", err.message);
        return ML_EXIT_USAGE;
    }

    lml_model *m;
    lml_chat *chat = NULL;
    lml_model_options oo = {.load = ml_cli_load_mode(o.use_mmap), .context = (int)o.context, .threads = (int)o.threads,
                            .batch = (int)o.batch, .no_tokenizer = 1};
    if ((s = lml_model_open(&m, o.model, &oo, &err))) return fail("loading the model", s, &err);
    /* The model's own template (.mlb v2) unless --chat-template names one. */
    const char *tmpl;
    if ((s = lml_chat_choose(m, co.template_name, &tmpl, &err))) {
        lml_model_close(m);
        fprintf(stderr, "ml_run --chat: %s (--chat-template NAME)\n", err.message);
        return ML_EXIT_USAGE;
    }
    if ((s = lml_model_load_tokenizer(m, o.tokenizer, &err))) {
        lml_model_close(m);
        return fail("loading the tokenizer", s, &err);
    }
    if ((s = lml_chat_open(&chat, m, tmpl, (size_t)1 << 20, &err))) {
        lml_model_close(m);
        return fail("setting up the chat template", s, &err);
    }
    lml_model_info info;
    lml_model_get_info(m, &info);
    chat_state cs = {.m = m, .context = info.context, .byte_level = info.byte_level};
    cs.max_reply = o.steps > 0 ? (int)o.steps : info.context;
    int eot = lml_chat_end_of_turn(chat);
    cs.stop[cs.n_stop++] = eot;
    if (info.eos >= 0 && info.eos != eot) cs.stop[cs.n_stop++] = info.eos;
    if (info.eot >= 0 && info.eot != eot) cs.stop[cs.n_stop++] = info.eot;
    lml_sampler_options so = {.temperature = (float)o.temperature, .top_p = (float)o.topp, .top_k = (int)o.top_k,
                              .min_p = (float)o.min_p, .repeat_penalty = (float)o.repeat_penalty,
                              .repeat_last_n = (int)o.repeat_last_n,
                              .seed = o.seed ? o.seed : (unsigned long long)time(NULL)};
    rc = ML_EXIT_OK;
    if ((s = lml_sampler_open(&cs.smp, m, &so, &err))) {
        rc = fail("setting up the sampler", s, &err);
        goto done;
    }
    fprintf(stderr, "ml_run --chat: %s build, template %s, context %d tokens; end with Ctrl-D (Ctrl-C stops a reply)\n",
            lml_build_isa(), lml_chat_name(chat), info.context);
    catch_sigint(1);

    int *buf = NULL;
    for (int first = 1;;) {
        printf("> ");
        fflush(stdout);
        interrupted = 0;
        int has_nul = 0;
        catch_sigint(0);
        char *line = read_line(&has_nul);
        catch_sigint(1);
        if (!line) {
            printf("\n");
            break;
        }
        if (has_nul) {
            fprintf(stderr, "[the line holds a NUL byte, which is not text: skipped]\n");
            free(line);
            continue;
        }
        /* The first turn: the start, the system message, the user's; then the previous reply's end (its stop
         * token was sampled, not fed) and the user's. */
        lml_chat_message msgs[2] = {{LML_ROLE_SYSTEM, co.system}, {LML_ROLE_USER, line}};
        int with_system = first && co.system;
        const lml_chat_message *turn = msgs + !with_system;
        size_t cap = lml_chat_capacity(chat, turn, 1 + with_system);
        int *bigger = realloc(buf, (cap + 16) * sizeof *buf);
        if (!bigger) {
            free(line);
            fprintf(stderr, "ml_run --chat: out of memory for the turn\n");
            rc = ML_EXIT_FAIL;
            break;
        }
        buf = bigger;
        int n_turn = 0;
        s = lml_chat_render(chat, turn, 1 + with_system,
                            LML_CHAT_ADD_GENERATION_PROMPT | (first ? 0 : LML_CHAT_AFTER_REPLY), buf, cap + 16, &n_turn,
                            &err);
        free(line);
        if (s) {
            rc = fail("rendering the turn", s, &err);
            break;
        }
        size_t n_new = (size_t)n_turn;
        /* One position must stay free for the reply's first token. */
        if ((size_t)cs.pos + n_new + 1 > (size_t)info.context) {
            fprintf(stderr, "ml_run --chat: context full: this turn needs %zu tokens, %d of %d are left; the chat ends "
                    "here (start again, or give a larger -c)\n", n_new, info.context - cs.pos, info.context);
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
                    "(start again, or give a larger -c)\n", info.context);
            rc = ML_EXIT_FAIL;
            break;
        }
        first = 0; /* a skipped line is no turn */
    }
    free(buf);
done:
    lml_sampler_close(cs.smp);
    lml_chat_close(chat);
    lml_model_close(m);
    return rc;
}

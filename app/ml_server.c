/* ml_server: one loaded model behind the parts of the OpenAI HTTP API that
 * clients use: POST /v1/completions and /v1/chat/completions (stream: true
 * as server-sent events ending in "data: [DONE]"), GET /v1/models, GET
 * /health. POSIX sockets (not built on Windows).
 *
 * One thread, one event loop: connections are read with poll() and a
 * deadline; a complete request joins a queue; requests are served one at a
 * time, in order, through lml_generate (the text of ml_run, byte for byte).
 * Between two tokens the loop accepts and reads the others, and the writes
 * of one reply wait for its client --timeout in all, so a slow or stalled
 * client holds nobody up for longer than --timeout; a client that
 * disconnects mid-reply ends its generation and frees its slot. Every buffer
 * is allocated at start: per connection (--max-queue of them) a request
 * buffer of --max-head + --max-body bytes; one response, one token buffer,
 * one JSON node pool and one buffer for messages sent as text parts, shared
 * by the request being served. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "app/http.h"
#include "app/json.h"
#include "app/run_text.h"
#include "include/legacy_ml.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

/* ---- options ------------------------------------------------------------------ */

typedef struct {
    const char *model, *tokenizer, *host, *api_key, *template_name, *name;
    long port, threads, batch;
    long context; /* -c; -1: not given (the library's default cap) */
    long max_queue, max_head, max_body, max_tokens, json_depth, timeout_ms;
} srv_opts;

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_server -m model.mlb [-z tokenizer] [options]\n"
            "  -m FILE, -z FILE     the model and its tokenizer (as ml_run; default: the one\n"
            "                       the model embeds)\n"
            "  --host ADDR          IPv4 address to listen on (default 127.0.0.1)\n"
            "  --port N             TCP port (default 8080; 0: any free one, printed)\n"
            "  --api-key KEY        require 'Authorization: Bearer KEY' on /v1/\n"
            "  --chat-template NAME chatml, llama3, zephyr, llama2, deepseek-r1 (for /v1/chat/completions)\n"
            "  --name NAME          the model's id in the API (default: the file name)\n"
            "  -t N, -c N, -b N     threads, context cap (default 4096; 0: the model's),\n"
            "                       prompt batch (as ml_run)\n"
            "  llama-server's --model, --threads, --ctx-size, --batch-size and --alias (--name)\n"
            "  work too\n"
            "  --max-queue N        connections held at once, served in turn (default 16)\n"
            "  --max-tokens N       the largest max_tokens a request may ask (default 4096)\n"
            "  --max-body N         request body bytes (default 262144)\n"
            "  --max-head N         request head bytes (default 8192)\n"
            "  --json-depth N       JSON nesting (default 32)\n"
            "  --timeout MS         a request not complete MS ms after its connection (or\n"
            "                       the previous reply), or a reply that has waited MS ms in\n"
            "                       all for the client to read, closes it (default 10000)\n"
            "build: %s\n",
            lml_build_isa());
}

static int parse_args(int argc, char **argv, srv_opts *o) {
    *o = (srv_opts){.host = "127.0.0.1", .port = 8080, .threads = 0 /* the library's default */, .context = -1,
                    .batch = ML_RUN_DEFAULT_BATCH,
                    .max_queue = 16, .max_head = 8192, .max_body = 262144, .max_tokens = 4096, .json_depth = 32,
                    .timeout_ms = 10000};
    static const ml_cli_alias aliases[] = {{"--model", "-m"}, {"--threads", "-t"}, {"--ctx-size", "-c"},
                                           {"--batch-size", "-b"}, {"--alias", "--name"}};
    for (int i = 1; i < argc; i += 2) { /* every option but -h takes a value */
        const char *a = ml_cli_unalias(argv[i], aliases, sizeof aliases / sizeof *aliases);
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ML_EXIT_OK;
        }
        struct { const char *flag; const char **s; long *n; long lo, hi; } opt[] = {
            {"-m", &o->model, NULL, 0, 0}, {"-z", &o->tokenizer, NULL, 0, 0}, {"--host", &o->host, NULL, 0, 0},
            {"--api-key", &o->api_key, NULL, 0, 0}, {"--chat-template", &o->template_name, NULL, 0, 0},
            {"--name", &o->name, NULL, 0, 0}, {"--port", NULL, &o->port, 0, 65535},
            {"-t", NULL, &o->threads, 1, 256}, {"-c", NULL, &o->context, 0, ML_CLI_MAX_CONTEXT},
            {"-b", NULL, &o->batch, 1, ML_CLI_MAX_BATCH}, {"--max-queue", NULL, &o->max_queue, 1, 1024},
            {"--max-tokens", NULL, &o->max_tokens, 1, ML_CLI_MAX_CONTEXT},
            {"--max-body", NULL, &o->max_body, 64, 1L << 26}, {"--max-head", NULL, &o->max_head, 512, 1L << 20},
            {"--json-depth", NULL, &o->json_depth, 2, 1000}, {"--timeout", NULL, &o->timeout_ms, 10, 3600000},
        };
        size_t k = 0, n_opt = sizeof opt / sizeof *opt;
        while (k < n_opt && strcmp(a, opt[k].flag)) k++;
        if (k == n_opt) {
            fprintf(stderr, "ml_server: unknown option '%s'\n\n", a);
            usage(stderr);
            return ML_EXIT_USAGE;
        }
        if (!v || (opt[k].n && !ml_cli_int(v, opt[k].lo, opt[k].hi, opt[k].n))) {
            if (opt[k].n)
                fprintf(stderr, "ml_server: %s needs an integer in %ld..%ld%s%s%s\n", a, opt[k].lo, opt[k].hi,
                        v ? ", got '" : "", v ? v : "", v ? "'" : "");
            else
                fprintf(stderr, "ml_server: %s needs a value\n", a);
            return ML_EXIT_USAGE;
        }
        if (opt[k].s) *opt[k].s = v;
    }
    if (!o->model) {
        fprintf(stderr, "ml_server: give -m model.mlb (ml_server -h)\n");
        return ML_EXIT_USAGE;
    }
    /* An empty key (--api-key "$KEY" with KEY unset) is a key no client can
     * send: the header's value is trimmed. */
    if (o->api_key && !o->api_key[0]) {
        fprintf(stderr, "ml_server: --api-key needs a non-empty key\n");
        return ML_EXIT_USAGE;
    }
    if (!o->name) {
        const char *slash = strrchr(o->model, '/');
        o->name = slash ? slash + 1 : o->model;
    }
    return ML_CLI_RUN;
}

/* ---- the server's state: everything allocated once -------------------------------- */

enum { C_FREE, C_READING, C_QUEUED, C_SERVING, C_LINGER };

typedef struct {
    int fd, state;
    char *in;          /* (in_cap) the request as read; keeps a pipelined next one */
    size_t in_n;
    double deadline;   /* a read that brings no complete request by then closes it */
    double wait_left;  /* ms the writes of one response may still wait for the client */
    ml_http_req req;
    int head_done, continue_sent;
} conn;

typedef struct {
    srv_opts o;
    lml_model *m;
    lml_model_info info;
    lml_chat *chat;    /* NULL: no template, /v1/chat/completions refused */
    int listen_fd;
    double accept_after; /* out of descriptors: the listener rests until then */
    conn *conns;       /* (max_queue) */
    int *queue, q_head, q_n; /* (max_queue) indices of complete requests, in arrival order */
    size_t in_cap;
    char *out;         /* (out_cap) the response being written */
    size_t out_cap;
    char *text;        /* (text_cap) the reply's text */
    size_t text_cap;
    int *tokens;       /* (tok_cap) the prompt's ids (and the encoder's workspace) */
    size_t tok_cap;
    ml_json json;      /* its node pool */
    lml_chat_message *msgs; /* (ML_SRV_MAX_MSGS) */
    char *parts;       /* (parts_cap) the messages whose content came as text parts, joined */
    size_t parts_cap, parts_n;
    unsigned long n_requests;
} server;

#define ML_SRV_MAX_MSGS 256
#define ML_SRV_MAX_STOPS 4

static volatile sig_atomic_t stopping;
static void on_signal(int sig) {
    (void)sig;
    stopping = 1;
}

/* ---- sockets: non-blocking, every wait bounded ------------------------------------ */

static void close_conn(conn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = C_FREE;
    c->in_n = 0;
    c->head_done = c->continue_sent = 0;
}

/* After an error reply to a request not read to its end (a body too large,
 * a bad head): closing at once with unread bytes would send a reset, which
 * can reach the client before it reads the reply. So stop writing, and
 * read and drop what still comes, until the client closes or a second
 * passes (pump). */
#define LINGER_MS 1000
static void linger_conn(conn *c, double t) {
    shutdown(c->fd, SHUT_WR);
    c->state = C_LINGER;
    c->in_n = 0;
    c->deadline = t + LINGER_MS / 1e3;
}

static void drain_conn(conn *c) {
    char sink[4096];
    ssize_t r;
    while ((r = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {}
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) close_conn(c);
}

/* Send all n bytes. The waits for the client to read add up to at most
 * --timeout per response (c->wait_left), however the client trickles its
 * reads: a slow reader holds the others up no longer than that. */
static int send_all(conn *c, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w, n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && c->wait_left >= 1) {
            struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
            double t0 = ml_cli_now();
            int r = poll(&pf, 1, (int)c->wait_left);
            c->wait_left -= (ml_cli_now() - t0) * 1e3;
            if (r > 0 && !(pf.revents & (POLLERR | POLLHUP))) continue;
            /* SIGINT/SIGTERM: the write ends its event within a second, so
             * that the stream can end with a word of why */
            if (r < 0 && errno == EINTR) {
                if (stopping && c->wait_left > LINGER_MS) c->wait_left = LINGER_MS;
                continue;
            }
        }
        return -1;
    }
    return 0;
}

/* ---- responses ------------------------------------------------------------------------ */

/* Append formatted text to the response; -1 when it does not fit. */
static int outf(server *sv, size_t *n, const char *fmt, ...) ML_PRINTF(3, 4);
static int outf(server *sv, size_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(sv->out + *n, sv->out_cap - *n, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sv->out_cap - *n) return -1;
    *n += (size_t)w;
    return 0;
}

static int send_json(conn *c, int status, const char *body, size_t len) {
    char head[256];
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n",
                     status, ml_http_reason(status), len, c->req.keep_alive && status < 400 && !stopping ? "keep-alive" : "close");
    int head_only = !strcmp(c->req.method, "HEAD"); /* a reply to HEAD has no body (RFC 9110) */
    return send_all(c, head, (size_t)h) || (!head_only && send_all(c, body, len)) ? -1 : 0;
}

/* A 4xx/5xx with an OpenAI-style error body; the connection closes after it. */
static void send_error(server *sv, conn *c, int status, const char *msg) {
    size_t n = 0;
    const char *type = status == 401 ? "authentication_error" : status >= 500 ? "server_error" : "invalid_request_error";
    outf(sv, &n, "{\"error\":{\"message\":");
    if (ml_json_put_string(sv->out, sv->out_cap, &n, msg, strlen(msg))) n = 0, outf(sv, &n, "{\"error\":{\"message\":\"\"");
    outf(sv, &n, ",\"type\":\"%s\",\"code\":%d}}", type, status);
    c->req.keep_alive = 0;
    send_json(c, status, sv->out, n);
}

/* ---- reading requests ------------------------------------------------------------------- */

static double now(void) { return ml_cli_now(); }

static void queue_push(server *sv, int i) {
    sv->queue[(sv->q_head + sv->q_n++) % sv->o.max_queue] = i;
    sv->conns[i].state = C_QUEUED;
}

/* After new bytes: a complete request is queued, a bad one answered. */
static void check_request(server *sv, int i) {
    conn *c = &sv->conns[i];
    if (!c->head_done) {
        int status = 0;
        const char *why = NULL;
        int r = ml_http_parse(c->in, c->in_n, (size_t)sv->o.max_head, (size_t)sv->o.max_body, &c->req, &status, &why);
        if (r < 0) {
            send_error(sv, c, status, why);
            linger_conn(c, now());
            return;
        }
        if (r == 0) return;
        c->head_done = 1;
    }
    size_t need = c->req.head_len + c->req.content_length;
    if (c->in_n >= need) {
        queue_push(sv, i);
        return;
    }
    if (c->req.expect_continue && !c->continue_sent) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        c->continue_sent = 1;
        if (send_all(c, cont, sizeof cont - 1)) close_conn(c);
    }
}

static void read_conn(server *sv, int i) {
    conn *c = &sv->conns[i];
    size_t room = sv->in_cap - 1 - c->in_n;
    if (!room) { /* the head and body limits fit in_cap: only a pipelined surplus gets here */
        send_error(sv, c, 413, "request too large");
        linger_conn(c, now());
        return;
    }
    ssize_t r = recv(c->fd, c->in + c->in_n, room, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close_conn(c);
        return;
    }
    if (r > 0) {
        c->in_n += (size_t)r;
        check_request(sv, i);
    }
}

static void accept_conns(server *sv) {
    for (;;) {
        int fd = accept(sv->listen_fd, NULL, NULL);
        if (fd < 0) {
            /* The waiting connection stays queued and the listener readable:
             * polling it again at once would spin. */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) sv->accept_after = now() + 0.1;
            return;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int i = 0;
        while (i < sv->o.max_queue && sv->conns[i].state != C_FREE) i++;
        if (i == sv->o.max_queue) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                       "Content-Length: 83\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
                                       "{\"error\":{\"message\":\"too many requests queued\",\"type\":\"server_error\",\"code\":503}}";
            ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)w;
            /* Closing a socket with unread bytes sends a reset, which can
             * reach the client before it reads the 503: drain what came. */
            shutdown(fd, SHUT_WR);
            char sink[512];
            while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {}
            close(fd);
            continue;
        }
        conn *c = &sv->conns[i];
        c->fd = fd;
        c->state = C_READING;
        c->in_n = 0;
        c->head_done = c->continue_sent = 0;
        c->deadline = now() + sv->o.timeout_ms / 1e3;
        c->wait_left = (double)sv->o.timeout_ms;
    }
}

/* One round of the event loop: accept, read, expire. wait_ms 0 while a
 * request is being served (between two tokens). */
static void pump(server *sv, int wait_ms) {
    struct pollfd pf[1 + 1024];
    int idx[1 + 1024], n = 0;
    pf[n] = (struct pollfd){.fd = now() < sv->accept_after ? -1 : sv->listen_fd, .events = POLLIN};
    idx[n++] = -1;
    for (int i = 0; i < sv->o.max_queue; i++)
        if (sv->conns[i].state == C_READING || sv->conns[i].state == C_LINGER) {
            pf[n] = (struct pollfd){.fd = sv->conns[i].fd, .events = POLLIN};
            idx[n++] = i;
        }
    int r = poll(pf, (nfds_t)n, wait_ms);
    /* The connections first (a closed one frees its slot), then the new ones. */
    for (int k = 1; r > 0 && k < n; k++) {
        if (!pf[k].revents) continue;
        if (sv->conns[idx[k]].state == C_READING) read_conn(sv, idx[k]);
        else if (sv->conns[idx[k]].state == C_LINGER) drain_conn(&sv->conns[idx[k]]);
    }
    if (r > 0 && pf[0].revents) accept_conns(sv);
    double t = now();
    for (int i = 0; i < sv->o.max_queue; i++) {
        conn *c = &sv->conns[i];
        if ((c->state != C_READING && c->state != C_LINGER) || t < c->deadline) continue;
        if (c->state == C_READING && c->in_n) send_error(sv, c, 408, "request not complete within the timeout");
        close_conn(c);
    }
}

/* ---- a request's parameters --------------------------------------------------------------- */

typedef struct {
    int chat, stream, include_usage;
    const char *prompt;
    int n_msgs;
    long max_tokens;
    double temperature, top_p, min_p, repeat_penalty;
    long top_k, repeat_last_n;
    unsigned long long seed;
    int has_seed;
    const char *stops[ML_SRV_MAX_STOPS];
    int n_stops;
} gen_req;

/* A number field in [lo, hi] (an integer if integer) into *out, unless
 * absent or null; 0 or why not. */
static int num_field(const ml_json *j, int root, const char *key, double lo, double hi, int integer, double *out) {
    int v = ml_json_get(j, root, key);
    if (v < 0 || j->nodes[v].type == ML_JSON_NULL) return 0;
    double d = j->nodes[v].num;
    if (j->nodes[v].type != ML_JSON_NUMBER || !(d >= lo && d <= hi) || (integer && d != (double)(long)d)) return -1;
    *out = d;
    return 0;
}

/* response_format {"type": "text"}: what we write anyway */
static int response_format_text(const ml_json *j, int v) {
    int t = ml_json_get(j, v, "type");
    return t >= 0 && j->nodes[t].type == ML_JSON_STRING && !strcmp(j->nodes[t].str, "text");
}

/* A message's content as an array of parts (OpenAI's newer form):
 * the text parts joined by "\n" into the parts buffer, as llama.cpp's server
 * joins them for a template that takes plain text. The buffer holds a
 * body's worth: the texts are shorter than the JSON that spells them. */
static const char *join_parts(server *sv, int arr, const char **out) {
    const ml_json *j = &sv->json;
    const ml_json_node *N = j->nodes;
    char *start = sv->parts + sv->parts_n;
    size_t n = 0, room = sv->parts_cap - sv->parts_n;
    for (int e = N[arr].child; e >= 0; e = N[e].next) {
        int type = ml_json_get(j, e, "type"), text = ml_json_get(j, e, "text");
        if (type < 0 || N[type].type != ML_JSON_STRING) return "each content part needs a string 'type'";
        if (strcmp(N[type].str, "text")) return "only text content parts are supported ('type': 'text')";
        if (text < 0 || N[text].type != ML_JSON_STRING) return "a text content part needs a string 'text'";
        size_t l = N[text].len + (n > 0);
        if (l + 1 > room - n) return "the messages are too long";
        if (n) start[n] = '\n';
        memcpy(start + n + (n > 0), N[text].str, N[text].len);
        n += l;
    }
    start[n] = 0;
    sv->parts_n += n + 1;
    *out = start;
    return NULL;
}

/* Reads the fields; returns NULL or the reason for a 400. */
static const char *read_params(server *sv, int root, gen_req *g) {
    ml_json *j = &sv->json;
    const ml_json_node *N = j->nodes;
    int v;
    const char *why;
    if (N[root].type != ML_JSON_OBJECT) return "the body must be a JSON object";
    sv->parts_n = 0;
    g->max_tokens = 16;
    g->temperature = 1.0;
    g->top_p = 1.0;
    if (g->chat) {
        g->max_tokens = sv->o.max_tokens < 4096 ? sv->o.max_tokens : 4096;
        if ((v = ml_json_get(j, root, "messages")) < 0 || N[v].type != ML_JSON_ARRAY)
            return "'messages' must be an array";
        if (N[v].n_children < 1 || N[v].n_children > ML_SRV_MAX_MSGS) return "'messages': 1 to 256 messages";
        for (int e = N[v].child; e >= 0; e = N[e].next) {
            int role = ml_json_get(j, e, "role"), content = ml_json_get(j, e, "content");
            if (role < 0 || N[role].type != ML_JSON_STRING) return "each message needs a string 'role'";
            if (content < 0 || (N[content].type != ML_JSON_STRING && N[content].type != ML_JSON_ARRAY))
                return "each message needs a 'content': a string or an array of text parts";
            lml_chat_message *m = &sv->msgs[g->n_msgs++];
            const char *r = N[role].str;
            m->role = !strcmp(r, "system") || !strcmp(r, "developer") ? LML_ROLE_SYSTEM
                      : !strcmp(r, "user") ? LML_ROLE_USER : LML_ROLE_ASSISTANT;
            if (m->role == LML_ROLE_ASSISTANT && strcmp(r, "assistant"))
                return "a message's role must be system, user or assistant";
            m->content = N[content].str;
            if (N[content].type == ML_JSON_ARRAY && (why = join_parts(sv, content, &m->content))) return why;
        }
    } else {
        if ((v = ml_json_get(j, root, "prompt")) < 0 || N[v].type != ML_JSON_STRING) return "'prompt' must be a string";
        g->prompt = N[v].str;
    }
    int mt = ml_json_get(j, root, g->chat ? "max_completion_tokens" : "max_tokens");
    if (mt < 0 && g->chat) mt = ml_json_get(j, root, "max_tokens");
    if (mt >= 0 && N[mt].type != ML_JSON_NULL) {
        double d = N[mt].num;
        if (N[mt].type != ML_JSON_NUMBER || !(d >= 1 && d <= (double)sv->o.max_tokens) || d != (double)(long)d)
            return "'max_tokens' must be an integer from 1 to the server's --max-tokens";
        g->max_tokens = (long)d;
    }
    if ((v = ml_json_get(j, root, "temperature")) >= 0 && N[v].type != ML_JSON_NULL) {
        if (N[v].type != ML_JSON_NUMBER || !(N[v].num >= 0 && N[v].num <= 2)) return "'temperature' must be in [0, 2]";
        g->temperature = N[v].num;
    }
    if ((v = ml_json_get(j, root, "top_p")) >= 0 && N[v].type != ML_JSON_NULL) {
        if (N[v].type != ML_JSON_NUMBER || !(N[v].num > 0 && N[v].num <= 1)) return "'top_p' must be in (0, 1]";
        /* at least the smallest normal float: a tinier one would round to 0, which is top-p off */
        g->top_p = N[v].num < FLT_MIN ? FLT_MIN : N[v].num;
    }
    if ((v = ml_json_get(j, root, "seed")) >= 0 && N[v].type != ML_JSON_NULL) {
        double d = N[v].num;
        if (N[v].type != ML_JSON_NUMBER || !(d >= -9.2e18 && d <= 9.2e18) || d != (double)(long long)d)
            return "'seed' must be an integer";
        g->seed = (unsigned long long)(long long)d;
        g->has_seed = 1;
    }
    /* llama.cpp's server's sampling fields, as ml_run's options */
    double d;
    g->repeat_penalty = 1.0, g->repeat_last_n = 64;
    d = 0;
    if (num_field(j, root, "top_k", 0, 1 << 30, 1, &d)) return "'top_k' must be an integer >= 0 (0 = off)";
    g->top_k = (long)d;
    if (num_field(j, root, "min_p", 0, 1, 0, &g->min_p)) return "'min_p' must be in [0, 1] (0 = off)";
    if (num_field(j, root, "repeat_penalty", 0, 1e6, 0, &g->repeat_penalty) || !((float)g->repeat_penalty > 0.0f))
        return "'repeat_penalty' must be > 0 (1 = off)";
    d = 64;
    if (num_field(j, root, "repeat_last_n", -1, 1 << 30, 1, &d))
        return "'repeat_last_n' must be an integer >= -1 (0 = off, -1 = the context)";
    g->repeat_last_n = (long)d;
    /* what we do not compute, accepted only at the value that asks for nothing */
    static const struct {
        const char *key;
        double only;
        const char *why;
    } numbers[] = {
        {"presence_penalty", 0, "'presence_penalty' is not supported (0 only; 'repeat_penalty' is)"},
        {"frequency_penalty", 0, "'frequency_penalty' is not supported (0 only; 'repeat_penalty' is)"},
        {"top_logprobs", 0, "log probabilities are not supported ('top_logprobs': 0 only)"},
        {"n_probs", 0, "log probabilities are not supported ('n_probs': 0 only)"},
        {"best_of", 1, "only 'best_of': 1 is supported"},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
        d = numbers[i].only;
        if (num_field(j, root, numbers[i].key, -1e300, 1e300, 0, &d) || d != numbers[i].only) return numbers[i].why;
    }
    static const struct {
        const char *key, *why;
    } falses[] = {{"logprobs", "log probabilities are not supported ('logprobs': false only)"},
                  {"echo", "'echo' is not supported (false only)"}},
      empties[] = {{"logit_bias", "'logit_bias' is not supported (empty only)"},
                   {"tools", "tools and function calls are not supported"},
                   {"functions", "tools and function calls are not supported"},
                   {"response_format", "'response_format' other than text is not supported"}};
    for (size_t i = 0; i < sizeof falses / sizeof *falses; i++)
        if ((v = ml_json_get(j, root, falses[i].key)) >= 0 && N[v].type != ML_JSON_NULL && N[v].type != ML_JSON_FALSE)
            return falses[i].why;
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++)
        if ((v = ml_json_get(j, root, empties[i].key)) >= 0 && N[v].type != ML_JSON_NULL &&
            !((N[v].type == ML_JSON_OBJECT || N[v].type == ML_JSON_ARRAY) && N[v].n_children == 0) &&
            (strcmp(empties[i].key, "response_format") || !response_format_text(j, v)))
            return empties[i].why;
    if ((v = ml_json_get(j, root, "n")) >= 0 && N[v].type != ML_JSON_NULL && (N[v].type != ML_JSON_NUMBER || N[v].num != 1))
        return "only 'n': 1 is supported";
    if ((v = ml_json_get(j, root, "stream")) >= 0 && N[v].type != ML_JSON_NULL) {
        if (N[v].type != ML_JSON_TRUE && N[v].type != ML_JSON_FALSE) return "'stream' must be a boolean";
        g->stream = N[v].type == ML_JSON_TRUE;
    }
    if ((v = ml_json_get(j, root, "stream_options")) >= 0 && N[v].type != ML_JSON_NULL) {
        int u = ml_json_get(j, v, "include_usage");
        if (N[v].type != ML_JSON_OBJECT || (u >= 0 && N[u].type != ML_JSON_TRUE && N[u].type != ML_JSON_FALSE))
            return "'stream_options' must be an object with a boolean 'include_usage'";
        g->include_usage = u >= 0 && N[u].type == ML_JSON_TRUE;
    }
    if ((v = ml_json_get(j, root, "stop")) >= 0 && N[v].type != ML_JSON_NULL) {
        int one = N[v].type == ML_JSON_STRING;
        if (!one && N[v].type != ML_JSON_ARRAY) return "'stop' must be a string or an array of strings";
        for (int e = one ? v : N[v].child; e >= 0; e = one ? -1 : N[e].next) {
            if (N[e].type != ML_JSON_STRING || !N[e].len || N[e].len > ML_STOP_MAX_LEN)
                return "each 'stop' must be a string of 1 to 255 bytes";
            if (g->n_stops == ML_SRV_MAX_STOPS) return "at most 4 'stop' strings";
            g->stops[g->n_stops++] = N[e].str;
        }
    }
    return NULL;
}

/* ---- generation: ml_run's text path ----------------------------------------------------------- */

typedef struct {
    server *sv;
    conn *c;
    const gen_req *g;
    char id[48];
    long created;
    int generating, n_gen, gone;
    int cut;                 /* SIGINT/SIGTERM ended the generation */
    size_t text_n, sent;     /* the reply's bytes so far; streamed up to sent */
    int full;                /* the text buffer is full */
    lml_utf8_state utf8;
    ml_stop_text stop;
} gen_ctx;

/* ml_run's print_piece: raw control bytes are dropped, whitespace kept. */
static void emit_text(void *ud, const char *p, size_t len) {
    gen_ctx *x = ud;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') continue;
        if (x->text_n + 1 >= x->sv->text_cap) {
            x->full = 1;
            return;
        }
        x->sv->text[x->text_n++] = (char)ch;
    }
}

/* Bytes of text[0..n) that end on a whole UTF-8 character (a split one waits). */
static size_t whole_chars(const char *t, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)t[n - k];
        if ((c & 0xC0) == 0x80) continue;
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > k ? n - k : n;
    }
    return n;
}

/* Send the event at out[16..n) as an HTTP chunk (its size line goes in the
 * 16 bytes before it), or alone to an HTTP/1.0 client. */
static int send_chunk(gen_ctx *x, size_t n) {
    server *sv = x->sv;
    if (outf(sv, &n, "\n\n\r\n")) return -1;
    if (x->c->req.http10) return send_all(x->c, sv->out + 16, n - 16 - 2); /* no chunks: the event alone */
    char size[16];
    int sl = snprintf(size, sizeof size, "%zx\r\n", n - 16 - 2);
    memcpy(sv->out + 16 - sl, size, (size_t)sl);
    return send_all(x->c, sv->out + 16 - sl, n - 16 + (size_t)sl);
}

/* A stream that cannot finish ends with an error event, as OpenAI's do
 * (the openai package raises it), and no "data: [DONE]". */
static int send_error_event(gen_ctx *x, int status, const char *msg) {
    server *sv = x->sv;
    size_t n = 16;
    outf(sv, &n, "data: {\"error\":{\"message\":");
    if (ml_json_put_string(sv->out, sv->out_cap, &n, msg, strlen(msg))) return -1;
    outf(sv, &n, ",\"type\":\"server_error\",\"code\":%d}}", status);
    static const char end[] = "0\r\n\r\n";
    return send_chunk(x, n) || (!x->c->req.http10 && send_all(x->c, end, sizeof end - 1)) ? -1 : 0;
}

/* One server-sent event as an HTTP chunk. delta: the text to send, or
 * NULL for the final event (finish_reason). */
static int send_event(gen_ctx *x, const char *delta, size_t len, const char *finish, int usage, int n_prompt) {
    server *sv = x->sv;
    size_t n = 16; /* room for the chunk size line */
    int chat = x->g->chat;
    outf(sv, &n, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%ld,\"model\":", x->id,
         chat ? "chat.completion.chunk" : "text_completion", x->created);
    ml_json_put_string(sv->out, sv->out_cap, &n, sv->o.name, strlen(sv->o.name));
    if (usage) {
        outf(sv, &n, ",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}",
             n_prompt, x->n_gen, n_prompt + x->n_gen);
    } else {
        outf(sv, &n, ",\"choices\":[{\"index\":0,");
        if (chat) outf(sv, &n, "\"delta\":{");
        else outf(sv, &n, "\"text\":");
        if (chat && delta && !x->sent && !len) outf(sv, &n, "\"role\":\"assistant\",\"content\":\"\"");
        else if (delta && chat) outf(sv, &n, "\"content\":");
        if (delta && (len || !chat) && ml_json_put_string(sv->out, sv->out_cap, &n, delta, len)) return -1;
        if (!delta && !chat) outf(sv, &n, "\"\"");
        if (chat) outf(sv, &n, "}");
        else outf(sv, &n, ",\"logprobs\":null");
        if (finish) outf(sv, &n, ",\"finish_reason\":\"%s\"}]}", finish);
        else outf(sv, &n, ",\"finish_reason\":null}]}");
    }
    return send_chunk(x, n);
}

static void stream_more(gen_ctx *x) {
    size_t upto = whole_chars(x->sv->text, x->text_n);
    if (upto <= x->sent || x->gone) return;
    if (send_event(x, x->sv->text + x->sent, upto - x->sent, NULL, 0, 0)) x->gone = 1;
    x->sent = upto;
}

/* Between two tokens: the others are read; a client gone ends its reply. */
static int should_stop(gen_ctx *x) {
    pump(x->sv, 0);
    if (!x->g->stream && !x->gone) {
        char b;
        struct pollfd pf = {.fd = x->c->fd, .events = POLLIN};
        if (poll(&pf, 1, 0) > 0 && ((pf.revents & (POLLERR | POLLHUP)) || recv(x->c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0))
            x->gone = 1;
    }
    if (stopping && !x->gone && !x->full && !x->stop.stopped) x->cut = 1;
    return x->gone || x->full || x->stop.stopped || stopping;
}

/* Each token after the prompt's: its text, then whether to stop. */
static int on_token(void *ud, int token, const char *piece, size_t len) {
    gen_ctx *x = ud;
    (void)token;
    if (!x->generating) return 0; /* the prompt's own tokens */
    x->n_gen++;
    char whole[LML_PIECE_MAX + 8];
    if (piece && x->sv->info.byte_level) {
        len = lml_utf8_feed(&x->utf8, piece, len, whole);
        piece = whole;
    }
    if (piece) ml_stop_text_feed(&x->stop, piece, len);
    if (x->g->stream) stream_more(x);
    return should_stop(x);
}

static void on_prompt_done(void *ud, int n_prompt) {
    (void)n_prompt;
    ((gen_ctx *)ud)->generating = 1;
}

static void serve_generate(server *sv, conn *c, int root, int chat) {
    gen_req g = {.chat = chat};
    const char *why = read_params(sv, root, &g);
    if (why) {
        send_error(sv, c, 400, why);
        return;
    }
    lml_error err = {{0}};
    lml_status s;
    int n_ids = 0;
    if (chat) {
        if (!sv->chat) {
            send_error(sv, c, 400, "this server has no chat template: start it with --chat-template NAME");
            return;
        }
        if (lml_chat_capacity(sv->chat, sv->msgs, g.n_msgs) > sv->tok_cap) {
            send_error(sv, c, 400, "the messages are too long");
            return;
        }
        s = lml_chat_render(sv->chat, sv->msgs, g.n_msgs, LML_CHAT_ADD_GENERATION_PROMPT, sv->tokens, sv->tok_cap,
                            &n_ids, &err);
    } else {
        if (lml_tokenize_capacity(g.prompt) > sv->tok_cap) {
            send_error(sv, c, 400, "the prompt is too long");
            return;
        }
        s = lml_tokenize(sv->m, g.prompt, sv->info.add_bos, sv->tokens, sv->tok_cap, &n_ids, &err);
    }
    if (s) {
        send_error(sv, c, 400, err.message);
        return;
    }
    size_t n_prompt = (size_t)n_ids;
    int ctx = sv->info.context;
    if (n_prompt == 0) {
        send_error(sv, c, 400, "the prompt is empty and this tokenizer starts with no BOS");
        return;
    }
    if (n_prompt >= (size_t)ctx) {
        char msg[160];
        snprintf(msg, sizeof msg, "the prompt is %zu tokens; the context holds %d", n_prompt, ctx);
        send_error(sv, c, 400, msg);
        return;
    }
    /* lml_generate emits steps - n_prompt + 1 tokens: max_tokens of them. */
    long steps = (long)n_prompt + g.max_tokens - 1;
    if (steps > ctx) steps = ctx;
    lml_callbacks cb = {.on_token = on_token, .on_prompt_done = on_prompt_done};
    /* A chat's reply ends at its template's end of turn, or the model's EOS
     * or EOT; a completion at the library's default stops, as ml_run's. */
    int stops[3], n_stops = 0, eot = lml_chat_end_of_turn(sv->chat);
    if (chat) {
        stops[n_stops++] = eot;
        if (sv->info.eos >= 0 && sv->info.eos != eot) stops[n_stops++] = sv->info.eos;
        if (sv->info.eot >= 0 && sv->info.eot != eot) stops[n_stops++] = sv->info.eot;
    }
    if ((s = lml_model_set_stop_tokens(sv->m, stops, n_stops, &err))) {
        send_error(sv, c, 500, err.message);
        return;
    }
    gen_ctx x = {.sv = sv, .c = c, .g = &g, .created = (long)time(NULL)};
    snprintf(x.id, sizeof x.id, "%s-%lu", chat ? "chatcmpl" : "cmpl", ++sv->n_requests);
    memset(&x.utf8, 0, sizeof x.utf8);
    ml_stop_text_init(&x.stop, g.stops, g.n_stops, emit_text, &x);
    cb.ud = &x;
    lml_sampler_options so = {.temperature = (float)g.temperature, .top_p = (float)g.top_p, .top_k = (int)g.top_k,
                              .min_p = (float)g.min_p, .repeat_penalty = (float)g.repeat_penalty,
                              .repeat_last_n = (int)g.repeat_last_n,
                              .seed = g.has_seed ? g.seed : (unsigned long long)time(NULL) + sv->n_requests};
    if (g.stream) {
        /* HTTP/1.1: chunked, the connection kept unless the client closes
         * it; an HTTP/1.0 client cannot take chunks: the stream ends with
         * the connection (RFC 9112 7, 9.6). */
        char head[192];
        if (c->req.http10) c->req.keep_alive = 0;
        int h = snprintf(head, sizeof head,
                         "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n%s"
                         "Connection: %s\r\n\r\n",
                         c->req.http10 ? "" : "Transfer-Encoding: chunked\r\n", c->req.keep_alive ? "keep-alive" : "close");
        if (send_all(c, head, (size_t)h)) x.gone = 1;
        if (chat && !x.gone && send_event(&x, "", 0, NULL, 0, 0)) x.gone = 1;
    }
    int n_pos = 0;
    c->state = C_SERVING;
    s = lml_generate(sv->m, sv->tokens, (int)n_prompt, (int)steps, &so, &cb, &n_pos, &err);
    char rest[8];
    size_t nr = lml_utf8_flush(&x.utf8, rest);
    if (nr) ml_stop_text_feed(&x.stop, rest, nr);
    ml_stop_text_flush(&x.stop);
    if (x.gone) {
        fprintf(stderr, "ml_server: %s: the client left after %d tokens\n", x.id, x.n_gen);
        c->req.keep_alive = 0;
        return;
    }
    /* A reply cut by SIGINT/SIGTERM is not passed off as a whole one ("stop"). */
    static const char cut_msg[] = "the server is stopping: the reply was cut short";
    if (s || x.cut) {
        if (g.stream) {
            c->req.keep_alive = 0; /* the stream just ends */
            if (x.cut) send_error_event(&x, 503, cut_msg);
        } else {
            send_error(sv, c, s ? 500 : 503, s ? err.message : cut_msg);
        }
        return;
    }
    /* "length": the tokens ran out (max_tokens or the context), or the text buffer. */
    const char *finish = x.full || (!x.stop.stopped && x.n_gen >= steps - (long)n_prompt + 1) ? "length" : "stop";
    if (g.stream) {
        x.sent = x.sent > x.text_n ? x.text_n : x.sent;
        if (x.text_n > x.sent && send_event(&x, sv->text + x.sent, x.text_n - x.sent, NULL, 0, 0)) return;
        x.sent = x.text_n;
        static const char done[] = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
        const size_t skip = c->req.http10 ? 3 : 0, cut = c->req.http10 ? 7 : 0; /* the chunk framing */
        if (send_event(&x, NULL, 0, finish, 0, 0) ||
            (g.include_usage && send_event(&x, NULL, 0, NULL, 1, (int)n_prompt)) ||
            send_all(c, done + skip, sizeof done - 1 - skip - cut))
            c->req.keep_alive = 0;
        return;
    }
    size_t n = 0;
    outf(sv, &n, "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%ld,\"model\":", x.id,
         chat ? "chat.completion" : "text_completion", x.created);
    ml_json_put_string(sv->out, sv->out_cap, &n, sv->o.name, strlen(sv->o.name));
    outf(sv, &n, ",\"choices\":[{\"index\":0,%s", chat ? "\"message\":{\"role\":\"assistant\",\"content\":" : "\"text\":");
    int bad = ml_json_put_string(sv->out, sv->out_cap, &n, sv->text, x.text_n);
    bad |= outf(sv, &n, "%s,\"finish_reason\":\"%s\"}],\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%d,"
                "\"total_tokens\":%zu}}", chat ? "}" : ",\"logprobs\":null", finish, n_prompt, x.n_gen,
                n_prompt + (size_t)x.n_gen);
    if (bad) send_error(sv, c, 500, "the response does not fit the server's buffer");
    else if (send_json(c, 200, sv->out, n)) c->req.keep_alive = 0;
}

/* ---- routing ------------------------------------------------------------------------------------ */

static void serve(server *sv, conn *c) {
    const ml_http_req *r = &c->req;
    int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");
    int health = !strcmp(r->path, "/health"), models = !strcmp(r->path, "/v1/models");
    int compl = !strcmp(r->path, "/v1/completions"), chat = !strcmp(r->path, "/v1/chat/completions");
    if (!health && !models && !compl && !chat) {
        send_error(sv, c, 404, "unknown path");
        return;
    }
    if (((health || models) && !get) || ((compl || chat) && !post)) {
        send_error(sv, c, 405, "method not allowed on this path");
        return;
    }
    if (sv->o.api_key && !health) {
        size_t kl = strlen(sv->o.api_key);
        /* the scheme's name is case-insensitive (RFC 9110 11.1) */
        if (!r->auth || r->auth_len != kl + 7 || strncasecmp(r->auth, "Bearer ", 7) || memcmp(r->auth + 7, sv->o.api_key, kl)) {
            send_error(sv, c, 401, "a valid API key is required (Authorization: Bearer KEY)");
            return;
        }
    }
    size_t n = 0;
    if (health) {
        outf(sv, &n, "{\"status\":\"ok\"}");
        if (send_json(c, 200, sv->out, n)) c->req.keep_alive = 0;
        return;
    }
    if (models) {
        outf(sv, &n, "{\"object\":\"list\",\"data\":[{\"id\":");
        ml_json_put_string(sv->out, sv->out_cap, &n, sv->o.name, strlen(sv->o.name));
        outf(sv, &n, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"legacy-ml\"}]}");
        if (send_json(c, 200, sv->out, n)) c->req.keep_alive = 0;
        return;
    }
    char *body = c->in + r->head_len;
    if (ml_json_parse(&sv->json, body, r->content_length)) {
        char msg[200];
        snprintf(msg, sizeof msg, "bad JSON: %s", sv->json.msg);
        send_error(sv, c, 400, msg);
        return;
    }
    serve_generate(sv, c, 0, chat);
}

/* Serve the next queued request, then keep its connection for the next
 * one (keep-alive) or close it. */
static void serve_next(server *sv) {
    int i = sv->queue[sv->q_head];
    sv->q_head = (sv->q_head + 1) % sv->o.max_queue;
    sv->q_n--;
    conn *c = &sv->conns[i];
    c->state = C_SERVING;
    c->wait_left = (double)sv->o.timeout_ms;
    serve(sv, c);
    if (c->fd < 0) return;
    if (!c->req.keep_alive) {
        close_conn(c);
        return;
    }
    size_t used = c->req.head_len + c->req.content_length;
    memmove(c->in, c->in + used, c->in_n - used);
    c->in_n -= used;
    c->head_done = c->continue_sent = 0;
    c->state = C_READING;
    c->deadline = now() + sv->o.timeout_ms / 1e3;
    c->wait_left = (double)sv->o.timeout_ms;
    if (c->in_n) check_request(sv, i);
}

/* ---- main ---------------------------------------------------------------------------------------- */

/* Every connection is a file descriptor: --max-queue of them, the listener,
 * the standard streams, the model's files and the one that gets a 503 must
 * fit the limit (raised to the hard one if need be). Past it, accept()
 * fails and the waiting clients get no answer at all. */
#define ML_SRV_FD_SPARE 16
static int check_fd_limit(const srv_opts *o) {
    struct rlimit rl;
    rlim_t need = (rlim_t)o->max_queue + ML_SRV_FD_SPARE;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return 0;
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
        rl.rlim_cur = need;
        if (!setrlimit(RLIMIT_NOFILE, &rl)) return 0;
    }
    fprintf(stderr, "ml_server: --max-queue %ld needs %ld open files; the limit is %ld (ulimit -n): a smaller "
            "--max-queue, or a higher limit\n", o->max_queue, (long)need,
            (long)(rl.rlim_max == RLIM_INFINITY ? rl.rlim_cur : rl.rlim_max));
    return -1;
}

/* The address and the port before the model: a typo or a port in use is
 * told at once, not after a long load. */
static int listen_on(server *sv) {
    srv_opts *o = &sv->o;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)o->port)};
    if (inet_pton(AF_INET, o->host, &addr.sin_addr) != 1) {
        fprintf(stderr, "ml_server: --host '%s' is not an IPv4 address\n", o->host);
        return ML_EXIT_USAGE;
    }
    if (check_fd_limit(o)) return ML_EXIT_USAGE;
    int one = 1;
    sv->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (sv->listen_fd < 0 || setsockopt(sv->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(sv->listen_fd, (struct sockaddr *)&addr, sizeof addr) || listen(sv->listen_fd, 64)) {
        fprintf(stderr, "ml_server: cannot listen on %s:%ld: %s\n", o->host, o->port, strerror(errno));
        return ML_EXIT_FAIL;
    }
    fcntl(sv->listen_fd, F_SETFL, fcntl(sv->listen_fd, F_GETFL) | O_NONBLOCK);
    return ML_CLI_RUN;
}

static int start(server *sv) {
    srv_opts *o = &sv->o;
    lml_error err = {{0}};
    lml_status s;
    int rc = listen_on(sv);
    if (rc != ML_CLI_RUN) return rc;
    /* The tokenizer apart, so that its failure is told as such. */
    lml_model_options mo = {.no_tokenizer = 1, .threads = (int)o->threads,
                            .context = o->context < 0 ? 0 : (int)ml_cli_context(o->context), .batch = (int)o->batch,
                            .load = LML_LOAD_AUTO};
    char gguf_mlb[4096]; /* -m X.gguf: its cached .mlb (the API's id stays X.gguf's name) */
    const char *path = ml_cli_model_path("ml_server", o->model, gguf_mlb, sizeof gguf_mlb);
    if (!path) return ML_EXIT_FAIL;
    if ((s = lml_model_open(&sv->m, path, &mo, &err))) {
        fprintf(stderr, "ml_server: loading the model failed (%s): %s\n", ml_cli_status_name(s), err.message);
        return ML_EXIT_FAIL;
    }
    if ((s = lml_model_load_tokenizer(sv->m, o->tokenizer, &err))) {
        fprintf(stderr, "ml_server: loading the tokenizer failed (%s): %s\n", ml_cli_status_name(s), err.message);
        return ML_EXIT_FAIL;
    }
    lml_model_get_info(sv->m, &sv->info);
    /* --chat-template, or the model's own template (.mlb v2); with neither,
     * only /v1/completions serves. */
    if (o->template_name || sv->info.chat_template_bytes) {
        if ((s = lml_chat_open(&sv->chat, sv->m, o->template_name, (size_t)o->max_body, &err))) {
            fprintf(stderr, "ml_server: the chat template: %s\n", err.message);
            return s == LML_E_ARG ? ML_EXIT_USAGE : ML_EXIT_FAIL;
        }
    }
    /* The pools. The JSON nodes: at most one per two body bytes, plus one. */
    sv->in_cap = (size_t)o->max_head + (size_t)o->max_body + 1;
    sv->text_cap = (size_t)1 << 18;
    sv->out_cap = 6 * sv->text_cap + 65536;
    /* The prompt's ids: the body's text and the template's, with the encoder's workspace. */
    /* lml_tokenize_capacity's bound (either kind of tokenizer) and lml_chat_capacity's per message,
     * for text NFC does not grow (a body of other text near the limit is refused as too long). */
    size_t text_max = (size_t)o->max_body + 64 * (ML_SRV_MAX_MSGS + 1);
    sv->tok_cap = 10 * text_max + text_max / 4 + 17 + 16 * (ML_SRV_MAX_MSGS + 1);
    sv->json.cap = (int)(o->max_body / 2 + 2);
    sv->json.max_depth = (int)o->json_depth;
    sv->conns = calloc((size_t)o->max_queue, sizeof *sv->conns);
    sv->queue = calloc((size_t)o->max_queue, sizeof *sv->queue);
    sv->out = malloc(sv->out_cap);
    sv->text = malloc(sv->text_cap);
    sv->tokens = malloc(sv->tok_cap * sizeof *sv->tokens);
    sv->json.nodes = malloc((size_t)sv->json.cap * sizeof *sv->json.nodes);
    sv->msgs = calloc(ML_SRV_MAX_MSGS, sizeof *sv->msgs);
    sv->parts_cap = (size_t)o->max_body + 1;
    sv->parts = malloc(sv->parts_cap);
    int ok = sv->conns && sv->queue && sv->out && sv->text && sv->tokens && sv->json.nodes && sv->msgs && sv->parts;
    for (int i = 0; ok && i < o->max_queue; i++) {
        sv->conns[i].fd = -1;
        ok = (sv->conns[i].in = malloc(sv->in_cap)) != NULL;
    }
    if (!ok) {
        fprintf(stderr, "ml_server: out of memory for the buffers\n");
        return ML_EXIT_FAIL;
    }

    struct sockaddr_in addr;
    socklen_t al = sizeof addr;
    getsockname(sv->listen_fd, (struct sockaddr *)&addr, &al);
    printf("ml_server: listening on http://%s:%d, model %s (%s, context %d, %s), template %s, build %s%s\n", o->host,
           ntohs(addr.sin_port), o->name, o->model, sv->info.context, sv->info.tokenizer,
           sv->chat ? lml_chat_name(sv->chat) : "none", lml_build_isa(), o->api_key ? ", API key required" : "");
    fflush(stdout);
    return ML_CLI_RUN;
}

static void stop_server(server *sv) {
    for (int i = 0; sv->conns && i < sv->o.max_queue; i++) {
        if (sv->conns[i].fd >= 0) close(sv->conns[i].fd);
        free(sv->conns[i].in);
    }
    if (sv->listen_fd >= 0) close(sv->listen_fd);
    free(sv->conns), free(sv->queue), free(sv->out), free(sv->text), free(sv->tokens), free(sv->json.nodes);
    free(sv->msgs), free(sv->parts);
    lml_chat_close(sv->chat);
    lml_model_close(sv->m);
}

int ml_main(int argc, char **argv) {
    static server sv;
    sv.listen_fd = -1;
    int rc = parse_args(argc, argv, &sv.o);
    if (rc != ML_CLI_RUN) return rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if ((rc = start(&sv)) == ML_CLI_RUN) {
        while (!stopping) {
            if (sv.q_n) serve_next(&sv);
            else pump(&sv, 200);
        }
        /* The requests still queued are told, not dropped without a word. */
        for (; sv.q_n; sv.q_n--, sv.q_head = (sv.q_head + 1) % sv.o.max_queue) {
            conn *c = &sv.conns[sv.queue[sv.q_head]];
            c->wait_left = LINGER_MS;
            send_error(&sv, c, 503, "the server is stopping");
        }
        fprintf(stderr, "ml_server: stopped after %lu completions\n", sv.n_requests);
        rc = ML_EXIT_OK;
    }
    stop_server(&sv);
    return rc;
}

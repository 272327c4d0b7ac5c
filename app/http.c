#include "app/http.h"

#include <string.h>

const char *ml_http_reason(int s) {
    switch (s) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Does name[0..n) equal want (lower case), ignoring case? */
static int name_is(const char *name, size_t n, const char *want) {
    if (strlen(want) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)name[i]) != want[i]) return 0;
    return 1;
}

/* Does the value contain token (lower case), ignoring case? ("keep-alive, Upgrade") */
static int value_has(const char *v, size_t n, const char *token) {
    size_t t = strlen(token);
    for (size_t i = 0; i + t <= n; i++) {
        size_t k = 0;
        while (k < t && lower((unsigned char)v[i + k]) == token[k]) k++;
        if (k == t) return 1;
    }
    return 0;
}

/* RFC 9110 tchar: the method and header names. */
static int is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int bad(int *status, const char **why, int code, const char *text) {
    *status = code;
    *why = text;
    return -1;
}

/* The end of the line at buf[i..n) (the index of its '\n'), or n when none. */
static size_t line_end(const char *buf, size_t n, size_t i) {
    const char *e = memchr(buf + i, '\n', n - i);
    return e ? (size_t)(e - buf) : n;
}

int ml_http_parse(const char *buf, size_t n, size_t max_head, size_t max_body, ml_http_req *r, int *status,
                  const char **why) {
    memset(r, 0, sizeof *r);
    /* The head ends at the first blank line; until then, wait or refuse. */
    size_t scan = n < max_head ? n : max_head, end = 0;
    for (size_t i = 0; i < scan; i++)
        if (buf[i] == '\n' && ((i >= 1 && buf[i - 1] == '\n') || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n'))) {
            end = i + 1;
            break;
        }
    /* Until the head is complete, only its size is judged (431): judging a
     * part of its first line would make the answer depend on how the bytes
     * were split. */
    if (!end) return n >= max_head ? bad(status, why, 431, "request head too large") : 0;
    r->head_len = end;

    /* Request line: METHOD SP target SP HTTP/1.x CRLF */
    size_t le = line_end(buf, end, 0), p = 0, m = 0;
    size_t ll = le > 0 && buf[le - 1] == '\r' ? le - 1 : le;
    while (p < ll && is_tchar((unsigned char)buf[p])) {
        if (m + 1 >= sizeof r->method) return bad(status, why, 501, "unknown method");
        r->method[m++] = buf[p++];
    }
    if (!m || p >= ll || buf[p++] != ' ') return bad(status, why, 400, "bad request line");
    size_t t0 = p;
    while (p < ll && buf[p] != ' ') {
        unsigned char c = (unsigned char)buf[p];
        if (c <= 0x20 || c >= 0x7F) return bad(status, why, 400, "bad character in the request target");
        p++;
    }
    size_t tl = p - t0;
    if (!tl || buf[t0] != '/') return bad(status, why, 400, "the request target must start with '/'");
    const char *q = memchr(buf + t0, '?', tl);
    size_t pl = q ? (size_t)(q - (buf + t0)) : tl;
    if (pl >= ML_HTTP_MAX_PATH) return bad(status, why, 414, "request target too long");
    memcpy(r->path, buf + t0, pl);
    if (p >= ll || buf[p++] != ' ') return bad(status, why, 400, "bad request line");
    if (ll - p != 8 || memcmp(buf + p, "HTTP/", 5) || buf[p + 6] != '.' || buf[p + 5] < '0' || buf[p + 5] > '9' ||
        buf[p + 7] < '0' || buf[p + 7] > '9')
        return bad(status, why, 400, "bad HTTP version");
    if (buf[p + 5] != '1' || (buf[p + 7] != '0' && buf[p + 7] != '1')) return bad(status, why, 505, "only HTTP/1.0 and 1.1");
    r->keep_alive = buf[p + 7] == '1';
    r->http10 = buf[p + 7] == '0';

    /* Headers: name ":" OWS value OWS CRLF; no folding. */
    int seen_length = 0;
    for (size_t i = le + 1; i < end;) {
        size_t e = line_end(buf, end, i), l = e > i && buf[e - 1] == '\r' ? e - 1 : e;
        if (l == i) break; /* the blank line */
        size_t c = i;
        while (c < l && is_tchar((unsigned char)buf[c])) c++;
        if (c == i || c >= l || buf[c] != ':') return bad(status, why, 400, "bad header line");
        const char *name = buf + i;
        size_t nl = c - i, v = c + 1;
        while (v < l && (buf[v] == ' ' || buf[v] == '\t')) v++;
        size_t ve = l;
        while (ve > v && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t')) ve--;
        for (size_t k = v; k < ve; k++)
            if ((unsigned char)buf[k] < 0x20 && buf[k] != '\t') return bad(status, why, 400, "control character in a header");
        const char *val = buf + v;
        size_t vl = ve - v;
        if (name_is(name, nl, "content-length")) {
            size_t len = 0;
            if (!vl) return bad(status, why, 400, "empty Content-Length");
            for (size_t k = 0; k < vl; k++) {
                if (val[k] < '0' || val[k] > '9') return bad(status, why, 400, "bad Content-Length");
                if (len > max_body) return bad(status, why, 413, "request body too large");
                len = len * 10 + (size_t)(val[k] - '0');
            }
            if (len > max_body) return bad(status, why, 413, "request body too large");
            if (seen_length && len != r->content_length) return bad(status, why, 400, "two different Content-Lengths");
            r->content_length = len;
            seen_length = 1;
        } else if (name_is(name, nl, "transfer-encoding")) {
            return bad(status, why, 411, "chunked request bodies are not supported: send Content-Length");
        } else if (name_is(name, nl, "connection")) {
            if (value_has(val, vl, "close")) r->keep_alive = 0;
            else if (value_has(val, vl, "keep-alive")) r->keep_alive = 1;
        } else if (name_is(name, nl, "expect")) {
            if (!value_has(val, vl, "100-continue")) return bad(status, why, 400, "unknown Expect");
            r->expect_continue = 1;
        } else if (name_is(name, nl, "authorization")) {
            r->auth = val;
            r->auth_len = vl;
        }
        i = e + 1;
    }
    return 1;
}

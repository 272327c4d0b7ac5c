/* The request head of HTTP/1.1 (RFC 9112), parsed from a bounded buffer for
 * ml_server: request line, the headers it needs (Content-Length,
 * Connection, Expect, Authorization), limits on every size. No allocation:
 * the fields point into the caller's buffer. */
#ifndef ML_APP_HTTP_H
#define ML_APP_HTTP_H

#include <stddef.h>

#define ML_HTTP_MAX_PATH 256

typedef struct {
    char method[8];              /* "GET", "POST" ... */
    char path[ML_HTTP_MAX_PATH]; /* without the query string */
    size_t head_len;             /* bytes of the head, the blank line included */
    size_t content_length;       /* 0 without the header */
    int keep_alive;              /* HTTP/1.1 without "Connection: close" */
    int http10;                  /* an HTTP/1.0 request: no chunked replies */
    int expect_continue;         /* "Expect: 100-continue" */
    const char *auth;            /* the Authorization value, auth_len bytes; NULL: none */
    size_t auth_len;
} ml_http_req;

/* Parse the head at buf[0..n). Returns 1 when complete (r filled), 0 when
 * more bytes are needed, or -1 with *status (400, 411, 413, 414, 431, 501,
 * 505) and *why (a static text) for a malformed or too large request.
 * max_head bounds the head, max_body the Content-Length. */
int ml_http_parse(const char *buf, size_t n, size_t max_head, size_t max_body, ml_http_req *r, int *status,
                  const char **why);

/* The reason phrase of a status code ("Bad Request"). */
const char *ml_http_reason(int status);

#endif

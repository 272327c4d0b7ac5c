/* ml_server's parsers (app/json.c, app/http.c) on their edges: JSON values
 * of every type, escapes and surrogate pairs unescaped in place, strict
 * UTF-8, depth and node limits, trailing bytes; the writer's escapes; HTTP
 * request heads complete, incomplete, too large and malformed, with the
 * status each gets. Run under ASan/UBSan by the san suites. */
#include <stdio.h>
#include <string.h>

#include "app/http.h"
#include "app/json.h"
#include "tests/testlib.h"

/* ---- JSON ---------------------------------------------------------------------- */

static ml_json_node nodes[64];

static int parse(ml_json *j, const char *text, int depth) {
    static char buf[4096];
    size_t n = strlen(text);
    memcpy(buf, text, n + 1);
    *j = (ml_json){.nodes = nodes, .cap = 64, .max_depth = depth};
    return ml_json_parse(j, buf, n);
}

static void test_json(void) {
    int f0 = tl_failed;
    ml_json j;
    CHECK(!parse(&j, " {\"a\": [1, -2.5e1, true, false, null], \"b\": \"x\\ty\\u00e9\\ud83d\\ude00\\\"\"} ", 8),
          "a valid document: %s", j.msg);
    int a = ml_json_get(&j, 0, "a"), b = ml_json_get(&j, 0, "b");
    CHECK(nodes[0].type == ML_JSON_OBJECT && nodes[0].n_children == 2, "the object has 2 members");
    CHECK(a > 0 && nodes[a].type == ML_JSON_ARRAY && nodes[a].n_children == 5, "a: an array of 5");
    int e = a > 0 ? nodes[a].child : -1;
    CHECK(e > 0 && nodes[e].num == 1 && nodes[nodes[e].next].num == -25, "numbers 1 and -2.5e1");
    CHECK(b > 0 && !strcmp(nodes[b].str, "x\ty\xc3\xa9\xf0\x9f\x98\x80\"") && nodes[b].len == 10,
          "escapes, \\u00e9 and a surrogate pair unescaped in place");
    CHECK(ml_json_get(&j, 0, "c") == -1 && ml_json_get(&j, a, "a") == -1, "absent keys, a non-object");
    CHECK(!parse(&j, "{\"a\": 1, \"b\": 2, \"a\": \"x\"}", 2) && (a = ml_json_get(&j, 0, "a")) > 0 &&
              nodes[a].type == ML_JSON_STRING && nodes[0].n_children == 3,
          "a repeated name: its last value (as Python's json and llama.cpp's nlohmann::json)");
    CHECK(!parse(&j, "[]", 2) && nodes[0].n_children == 0 && !parse(&j, "{}", 2), "empty containers");
    CHECK(!parse(&j, "[[1]]", 3) && parse(&j, "[[[1]]]", 3), "depth 3 passes, 4 is refused: %s", j.msg);
    static const char *const bad[] = {
        "", " ", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", "-", "1e", "+1", ".5", "tru", "nul", "\"abc",
        "\"a\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\u0000\"", "\"\x01\"",
        "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "1 2", "{} x",
        "{1:2}", "[1 2]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(parse(&j, bad[i], 8) == -1 && j.msg[0], "refused: '%s'", bad[i]);
    static char many[400];
    for (int i = 0; i < 100; i++) memcpy(many + 2 * i, i ? ",1" : "[1", 2);
    strcpy(many + 200, "]");
    CHECK(parse(&j, many, 8) == -1 && strstr(j.msg, "too many"), "more values than nodes: %s", j.msg);
    GROUP_DONE("json: values, escapes, UTF-8, limits", f0);

    f0 = tl_failed;
    char out[64];
    size_t n = 0;
    CHECK(!ml_json_put_string(out, sizeof out, &n, "a\"\\\n\x01\xc3\xa9\xff", 8) && n < sizeof out, "put_string");
    out[n] = 0;
    CHECK(!strcmp(out, "\"a\\\"\\\\\\n\\u0001\xc3\xa9\xef\xbf\xbd\""), "escapes; an invalid byte as U+FFFD: %s", out);
    n = 0;
    CHECK(ml_json_put_string(out, 5, &n, "abcdef", 6) == -1 && n == 0, "no room: -1, nothing written");
    CHECK(ml_utf8_valid("a\xc3\xa9", 3) && !ml_utf8_valid("\xc3", 1) && !ml_utf8_valid("\xed\xb0\x80", 3),
          "ml_utf8_valid");
    GROUP_DONE("json: the writer", f0);
}

/* ---- HTTP ------------------------------------------------------------------------ */

static int head(const char *text, ml_http_req *r, int *status) {
    const char *why = NULL;
    *status = 0;
    return ml_http_parse(text, strlen(text), 1024, 1000, r, status, &why);
}

static void test_http(void) {
    int f0 = tl_failed, st;
    ml_http_req r;
    const char *ok = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-LENGTH: 12\r\n"
                     "Authorization:  Bearer k \r\nExpect: 100-continue\r\n\r\n{\"prompt\":1}";
    CHECK(head(ok, &r, &st) == 1, "a complete head");
    CHECK(!strcmp(r.method, "POST") && !strcmp(r.path, "/v1/completions") && r.content_length == 12 && r.keep_alive &&
              r.expect_continue && r.auth_len == 8 && !memcmp(r.auth, "Bearer k", 8) &&
              r.head_len == strlen(ok) - 12, "its fields (path without the query, headers any case, value trimmed)");
    CHECK(head("GET / HTTP/1.0\n\n", &r, &st) == 1 && !r.keep_alive, "bare LF; HTTP/1.0 closes");
    CHECK(head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &r, &st) == 1 && !r.keep_alive, "Connection: close");
    CHECK(head("GET / HTTP/1.1\r\nHost: a\r\n", &r, &st) == 0, "incomplete: more bytes needed");
    static const struct {
        const char *text;
        int status;
    } bad[] = {
        {"GET / HTTP/1.1\r\nX: " "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         431},
        {"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413},
        {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413},
        {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
        {"GET / HTTP/2.0\r\n\r\n", 505},
        {"GET / HTTP/1.1x\r\n\r\n", 400},
        {"GET x HTTP/1.1\r\n\r\n", 400},
        {"GET  / HTTP/1.1\r\n\r\n", 400},
        {"G(T / HTTP/1.1\r\n\r\n", 400},
        {"TOOLONGMETHOD / HTTP/1.1\r\n\r\n", 501},
        {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n folded: x\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", 400},
        {"GET /\x7f HTTP/1.1\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(head(bad[i].text, &r, &st) == -1 && st == bad[i].status, "refused #%zu with %d (got %d)", i,
              bad[i].status, st);
    char longpath[400] = "GET /";
    memset(longpath + 5, 'p', 300);
    strcpy(longpath + 305, " HTTP/1.1\r\n\r\n");
    CHECK(head(longpath, &r, &st) == -1 && st == 414, "a path over %d bytes: 414 (got %d)", ML_HTTP_MAX_PATH, st);
    /* The verdict never depends on where the bytes were split: every prefix
     * of a whole head is "more bytes" (0) or that head's own verdict. */
    char query[700] = "GET /health?";
    memset(query + 12, 'a', 600);
    strcpy(query + 612, " HTTP/1.1\r\n\r\n");
    char badtarget[400] = "GET ";
    memset(badtarget + 4, 'a', 300); /* no '/' first: 400, however long */
    strcpy(badtarget + 304, " HTTP/1.1\r\n\r\n");
    const char *whole[] = {query, longpath, "GET / HTTP/Y.1\r\n\r\n", badtarget};
    const int verdict[] = {1, 414, 400, 400};
    for (size_t w = 0; w < sizeof whole / sizeof *whole; w++) {
        const char *why = NULL;
        int bad_at = -1, got = 0;
        for (size_t n = 1; n <= strlen(whole[w]) && bad_at < 0; n++) {
            int rc = ml_http_parse(whole[w], n, 1024, 1000, &r, &st, &why);
            got = rc < 0 ? st : rc;
            if (n < strlen(whole[w]) ? (got != 0 && got != verdict[w]) : got != verdict[w]) bad_at = (int)n;
        }
        CHECK(bad_at < 0, "head #%zu: %d after its first %d bytes (whole: %d)", w, got, bad_at, verdict[w]);
    }
    CHECK(!strcmp(ml_http_reason(404), "Not Found") && !strcmp(ml_http_reason(999), "Error"), "reason phrases");
    GROUP_DONE("http: request heads", f0);
}

int ml_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_json();
    test_http();
    return tl_summary();
}

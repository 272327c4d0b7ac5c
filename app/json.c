#include "app/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/unicode_tables.h"

/* ---- UTF-8 -------------------------------------------------------------------- */

/* Bytes of the valid UTF-8 sequence at s[0..n), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t need;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) need = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) need = 4, min = 0x10000;
    else return 0;
    if (n < need) return 0;
    unsigned cp = c & (0x7F >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return need;
}

int ml_utf8_valid(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0, k; i < len; i += k)
        if (!(k = utf8_seq(u + i, len - i))) return 0;
    return 1;
}

/* ---- the parser: recursive descent, depth-limited --------------------------------- */

typedef struct {
    ml_json *j;
    char *s;
    size_t n, i;
    int failed;
} parser;

static int fail(parser *p, const char *why) {
    if (!p->failed) snprintf(p->j->msg, sizeof p->j->msg, "%s at byte %zu", why, p->i);
    p->failed = 1;
    return -1;
}

static void skip_ws(parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int new_node(parser *p, ml_json_type t) {
    if (p->j->n >= p->j->cap) return fail(p, "too many JSON values");
    int k = p->j->n++;
    p->j->nodes[k] = (ml_json_node){.type = t, .next = -1, .child = -1};
    return k;
}

static int hex4(parser *p, unsigned *v) {
    *v = 0;
    if (p->n - p->i < 4) return fail(p, "short \\u escape");
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return fail(p, "bad \\u escape");
        *v = *v << 4 | d;
    }
    return 0;
}

/* A string at p->s[p->i] == '"', unescaped in place (the output never
 * outruns the input: an escape is longer than what it stands for). */
static int parse_string(parser *p, int k) {
    char *out = p->s + ++p->i, *o = out;
    for (;;) {
        if (p->i >= p->n) return fail(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') break;
        if (c < 0x20) return fail(p, "control character in a string");
        if (c != '\\') {
            size_t l = utf8_seq((const unsigned char *)p->s + p->i, p->n - p->i);
            if (!l) return fail(p, "invalid UTF-8 in a string");
            memmove(o, p->s + p->i, l);
            o += l, p->i += l;
            continue;
        }
        if (++p->i >= p->n) return fail(p, "unterminated escape");
        char e = p->s[p->i++];
        unsigned cp;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u':
            if (hex4(p, &cp)) return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, "lone low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') return fail(p, "lone high surrogate");
                p->i += 2;
                if (hex4(p, &lo)) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "bad surrogate pair");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) return fail(p, "\\u0000 in a string");
            o += ml_utf8_encode(cp, (unsigned char *)o);
            break;
        default: return fail(p, "bad escape");
        }
    }
    p->i++; /* the closing quote, which the NUL may now overwrite */
    *o = 0;
    p->j->nodes[k].str = out;
    p->j->nodes[k].len = (size_t)(o - out);
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *p, int k) {
    size_t start = p->i;
    if (p->i < p->n && p->s[p->i] == '-') p->i++;
    if (p->i >= p->n || !is_digit(p->s[p->i])) return fail(p, "bad number");
    if (p->s[p->i] == '0') p->i++;
    else
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    if (p->i < p->n && p->s[p->i] == '.') {
        if (++p->i >= p->n || !is_digit(p->s[p->i])) return fail(p, "bad number");
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i >= p->n || !is_digit(p->s[p->i])) return fail(p, "bad number");
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    }
    char tmp[64];
    size_t l = p->i - start;
    if (l >= sizeof tmp) return fail(p, "number too long");
    memcpy(tmp, p->s + start, l);
    tmp[l] = 0;
    p->j->nodes[k].num = strtod(tmp, NULL);
    return 0;
}

static int parse_value(parser *p, int depth);

/* An array or object after its opening bracket. */
static int parse_container(parser *p, int k, int depth, int object) {
    char close = object ? '}' : ']';
    int last = -1;
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        int first = p->j->n;
        if (object) {
            if (p->i >= p->n || p->s[p->i] != '"') return fail(p, "expected a member name");
            int key = new_node(p, ML_JSON_STRING);
            if (key < 0 || parse_string(p, key)) return -1;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return fail(p, "expected ':'");
            p->i++;
        }
        int v = parse_value(p, depth + 1);
        if (v < 0) return -1;
        if (last >= 0) p->j->nodes[last].next = first;
        else p->j->nodes[k].child = first;
        if (object) p->j->nodes[first].next = v;
        last = v;
        p->j->nodes[k].n_children++;
        skip_ws(p);
        if (p->i >= p->n) return fail(p, "unterminated array or object");
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->s[p->i] != close) return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        p->i++;
        return 0;
    }
}

static int literal(parser *p, const char *word) {
    size_t l = strlen(word);
    if (p->n - p->i < l || memcmp(p->s + p->i, word, l)) return fail(p, "bad literal");
    p->i += l;
    return 0;
}

/* Returns the node's index, or -1. */
static int parse_value(parser *p, int depth) {
    if (depth > p->j->max_depth) return fail(p, "nested too deep");
    skip_ws(p);
    if (p->i >= p->n) return fail(p, "expected a value");
    char c = p->s[p->i];
    int k, r;
    switch (c) {
    case '{':
    case '[':
        if ((k = new_node(p, c == '{' ? ML_JSON_OBJECT : ML_JSON_ARRAY)) < 0) return -1;
        r = parse_container(p, k, depth, c == '{');
        break;
    case '"':
        if ((k = new_node(p, ML_JSON_STRING)) < 0) return -1;
        r = parse_string(p, k);
        break;
    case 't': k = new_node(p, ML_JSON_TRUE), r = k < 0 ? -1 : literal(p, "true"); break;
    case 'f': k = new_node(p, ML_JSON_FALSE), r = k < 0 ? -1 : literal(p, "false"); break;
    case 'n': k = new_node(p, ML_JSON_NULL), r = k < 0 ? -1 : literal(p, "null"); break;
    default:
        if ((k = new_node(p, ML_JSON_NUMBER)) < 0) return -1;
        r = parse_number(p, k);
        break;
    }
    return r ? -1 : k;
}

int ml_json_parse(ml_json *j, char *text, size_t len) {
    parser p = {.j = j, .s = text, .n = len};
    j->n = 0;
    j->msg[0] = 0;
    if (parse_value(&p, 1) < 0) return -1;
    skip_ws(&p);
    if (p.i != p.n) return fail(&p, "trailing bytes after the value");
    return 0;
}

/* A name given twice means its last value, as Python's json, JavaScript and
 * nlohmann::json (llama.cpp's server) read it: a proxy that checked the last
 * value must not see us act on the first. */
int ml_json_get(const ml_json *j, int obj, const char *key) {
    if (obj < 0 || obj >= j->n || j->nodes[obj].type != ML_JSON_OBJECT) return -1;
    int found = -1;
    for (int k = j->nodes[obj].child; k >= 0;) {
        int v = j->nodes[k].next;
        if (!strcmp(j->nodes[k].str, key)) found = v;
        k = j->nodes[v].next;
    }
    return found;
}

/* ---- the writer ------------------------------------------------------------------ */

int ml_json_put_string(char *out, size_t cap, size_t *n, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    size_t o = *n;
    if (o >= cap) return -1;
    out[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[6];
        size_t k = 0;
        if (c == '"' || c == '\\') e[k++] = '\\', e[k++] = (char)c;
        else if (c == '\n') e[k++] = '\\', e[k++] = 'n';
        else if (c < 0x20 || c == 0x7F)
            e[k++] = '\\', e[k++] = 'u', e[k++] = '0', e[k++] = '0', e[k++] = hex[c >> 4], e[k++] = hex[c & 15];
        else if (c < 0x80) e[k++] = (char)c;
        else { /* a valid sequence as it is; an invalid byte as U+FFFD */
            size_t l = utf8_seq((const unsigned char *)s + i, len - i);
            if (l) memcpy(e, s + i, l), k = l, i += l - 1;
            else e[k++] = (char)0xEF, e[k++] = (char)0xBF, e[k++] = (char)0xBD;
        }
        if (cap - o < k + 1) return -1; /* room for the closing quote too */
        memcpy(out + o, e, k);
        o += k;
    }
    out[o++] = '"';
    *n = o;
    return 0;
}

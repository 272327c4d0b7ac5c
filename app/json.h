/* A small JSON parser (RFC 8259) for ml_server's request bodies, into a
 * node array the caller owns (no allocation): strings are validated as
 * UTF-8 and unescaped in place in the caller's buffer (each becomes a
 * NUL-terminated C string; "\u0000" is refused), numbers parsed to double,
 * nesting limited to max_depth. And the writer's half: a string escaped
 * into a bounded buffer. */
#ifndef ML_APP_JSON_H
#define ML_APP_JSON_H

#include <stddef.h>

typedef enum { ML_JSON_NULL, ML_JSON_FALSE, ML_JSON_TRUE, ML_JSON_NUMBER, ML_JSON_STRING, ML_JSON_ARRAY,
               ML_JSON_OBJECT } ml_json_type;

typedef struct {
    ml_json_type type;
    int next;        /* the next sibling (an object's members: key, value, key, value ...); -1: none */
    int child;       /* the first child (array, object); -1: none */
    int n_children;  /* array: elements; object: members (keys) */
    const char *str; /* string: the unescaped text, NUL-terminated, len bytes */
    size_t len;
    double num;      /* number */
} ml_json_node;

typedef struct {
    ml_json_node *nodes; /* (cap) */
    int cap, n;
    int max_depth;
    char msg[128];       /* why the parse failed, with the byte offset */
} ml_json;

/* Parse text[0..len) (modified in place: the strings are unescaped there,
 * each NUL-terminated within its own quotes; nothing past len is touched). The root is nodes[0]. Returns 0,
 * or -1 with the reason in j->msg (bad syntax, bad UTF-8, too deep, more
 * nodes than cap, trailing bytes). */
int ml_json_parse(ml_json *j, char *text, size_t len);

/* The value of key in object node obj (its last, if the name repeats); -1 if
 * absent (or obj is no object). */
int ml_json_get(const ml_json *j, int obj, const char *key);

/* Append s (len bytes of UTF-8; an invalid byte becomes U+FFFD) as a JSON
 * string, quotes included, to out[*n .. cap). Returns 0, or -1 (and *n unchanged) when it does not fit. */
int ml_json_put_string(char *out, size_t cap, size_t *n, const char *s, size_t len);

/* Does s[0..len) hold valid UTF-8 (no overlong forms, no surrogates)? */
int ml_utf8_valid(const char *s, size_t len);

#endif

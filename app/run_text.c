#include "app/run_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/path.h"

/* ---- the prompt file ----------------------------------------------------- */

static char *read_all(FILE *f, const char *path, char *msg, size_t msg_size) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(msg, msg_size, "out of memory for the prompt file '%s'", path);
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *bigger = cap * 2 > (size_t)ML_PROMPT_FILE_MAX + 1 ? NULL : realloc(buf, cap * 2);
            if (!bigger) {
                snprintf(msg, msg_size, "prompt file '%s': larger than %ld MiB, or out of memory", path,
                         ML_PROMPT_FILE_MAX >> 20);
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        snprintf(msg, msg_size, "reading the prompt file '%s' failed", path);
        free(buf);
        return NULL;
    }
    if (memchr(buf, 0, n)) {
        snprintf(msg, msg_size, "prompt file '%s' holds a NUL byte: not a text file", path);
        free(buf);
        return NULL;
    }
    if (n && buf[n - 1] == '\n') n--;
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = 0;
    return buf;
}

char *ml_run_read_prompt(const char *path, char *msg, size_t msg_size) {
    if (!strcmp(path, "-")) {
        ml_stdin_binary();
        return read_all(stdin, "(stdin)", msg, msg_size);
    }
    FILE *f = ml_fopen(path, "rb");
    if (!f) {
        snprintf(msg, msg_size, "cannot read the prompt file '%s': %s", path, strerror(errno));
        return NULL;
    }
    char *text = read_all(f, path, msg, msg_size);
    fclose(f);
    return text;
}

/* ---- stop strings ---------------------------------------------------------- */

void ml_stop_text_init(ml_stop_text *st, const char *const *stops, int n_stops,
                       void (*emit)(void *ud, const char *p, size_t len), void *ud) {
    *st = (ml_stop_text){.stops = stops, .n_stops = n_stops, .emit = emit, .ud = ud};
}

/* Length of the longest tail of held[0..n) that is a proper prefix of a stop string. */
static size_t longest_start(const ml_stop_text *st, const char *held, size_t n) {
    for (size_t keep = n; keep > 0; keep--)
        for (int k = 0; k < st->n_stops; k++)
            if (strlen(st->stops[k]) > keep && !memcmp(st->stops[k], held + n - keep, keep)) return keep;
    return 0;
}

/* Byte by byte: a stop string that ends at this byte started within the
 * held tail (every proper prefix of it is held), so none is missed. */
int ml_stop_text_feed(ml_stop_text *st, const char *p, size_t len) {
    if (st->stopped) return 1;
    if (st->n_stops == 0) {
        st->emit(st->ud, p, len);
        return 0;
    }
    char buf[ML_STOP_MAX_LEN + 1];
    for (size_t i = 0; i < len; i++) {
        memcpy(buf, st->held, st->n_held);
        size_t n = st->n_held;
        buf[n++] = p[i];
        for (int k = 0; k < st->n_stops; k++) {
            size_t sl = strlen(st->stops[k]);
            if (sl <= n && !memcmp(st->stops[k], buf + n - sl, sl)) {
                if (n > sl) st->emit(st->ud, buf, n - sl);
                st->n_held = 0;
                st->stopped = 1;
                return 1;
            }
        }
        size_t keep = longest_start(st, buf, n);
        if (n > keep) st->emit(st->ud, buf, n - keep);
        memcpy(st->held, buf + n - keep, keep);
        st->n_held = keep;
    }
    return 0;
}

void ml_stop_text_flush(ml_stop_text *st) {
    if (!st->stopped && st->n_held) st->emit(st->ud, st->held, st->n_held);
    st->n_held = 0;
}

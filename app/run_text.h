/* ml_run's text in and out: the prompt from a file or stdin (-f), and the
 * stop strings (--stop) that end the output. */
#ifndef ML_RUN_TEXT_H
#define ML_RUN_TEXT_H

#include <stddef.h>

/* The prompt file's text (path "-": stdin), NUL-terminated, one trailing
 * newline ("\n" or "\r\n") removed, as llama.cpp's -f does; the caller
 * frees it. NULL with the reason in msg: unreadable, larger than
 * ML_PROMPT_FILE_MAX, or holding a NUL byte. */
#define ML_PROMPT_FILE_MAX (64L << 20)
char *ml_run_read_prompt(const char *path, char *msg, size_t msg_size);

/* Stop strings: the generated text passes through ml_stop_text_feed, which
 * hands emit() every byte that cannot be the start of a stop string and
 * holds back the rest; when the text ends with a stop string, that string
 * is dropped, what came before it emitted, and feed returns 1. */
#define ML_STOP_MAX 8       /* --stop at most this many times */
#define ML_STOP_MAX_LEN 255 /* bytes of one stop string */

typedef struct {
    const char *const *stops; /* (n_stops) non-empty, at most ML_STOP_MAX_LEN bytes */
    int n_stops;
    char held[ML_STOP_MAX_LEN]; /* (n_held) the text's tail that may start a stop string */
    size_t n_held;
    int stopped;
    void (*emit)(void *ud, const char *p, size_t len);
    void *ud;
} ml_stop_text;

void ml_stop_text_init(ml_stop_text *st, const char *const *stops, int n_stops,
                       void (*emit)(void *ud, const char *p, size_t len), void *ud);
int ml_stop_text_feed(ml_stop_text *st, const char *p, size_t len);
/* The end of the text: emit what is held (nothing once stopped). */
void ml_stop_text_flush(ml_stop_text *st);

#endif

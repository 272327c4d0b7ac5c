/* ml_tokenize: print the tokens of a text, as llama.cpp's llama-tokenize does.
 * The tokenizer is -z (a llama2.c tokenizer.bin or a BPE tokenizer file,
 * tools/tokfile.py) or the one the model -m embeds (.mlb version 2); the
 * model gives the vocab size it must match. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "core/path.h" /* ml_fopen: UTF-8 paths on Windows too */
#include "include/legacy_ml.h"

typedef struct {
    const char *model, *tokenizer, *text, *file;
    int ids_only, special, no_bos, time;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_tokenize -m model.mlb [-z TOKENIZER] (-i TEXT | -f FILE) [options]\n"
            "  -m FILE        model, converted by tools/convert.py (its vocab size)\n"
            "  -z FILE        tokenizer: a llama2.c tokenizer.bin or a BPE tokenizer file\n"
            "                 (tools/tokfile.py); default: the one the model embeds\n"
            "  -i TEXT        the text\n"
            "  -f FILE        the text from FILE (- = stdin), as it is\n"
            "  --ids          print only the ids, separated by spaces, on one line\n"
            "  --special      control tokens spelled in the text (<|im_end|>) are single\n"
            "                 tokens (default: plain text)\n"
            "  --no-bos       no BOS token first (default: the tokenizer's own rule)\n"
            "  --time         say on stderr how long encoding took (the text only: not\n"
            "                 loading, not printing)\n"
            "  --version      print the version and the build, and exit\n"
            "output: one line per token, 'id -> 'piece'' (bytes that are no whole UTF-8\n"
            "character, quotes and backslashes are written \\xNN)\n"
            "build: %s\n",
            lml_build_isa());
}

static int usage_error(const char *what, const char *arg) {
    fprintf(stderr, "ml_tokenize: %s%s%s\n\n", what, arg ? " " : "", arg ? arg : "");
    usage(stderr);
    return ML_EXIT_USAGE;
}

/* Returns ML_CLI_RUN or an exit code. */
static int parse_args(int argc, char **argv, options *o) {
    *o = (options){0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ML_EXIT_OK;
        }
        if (!strcmp(a, "--ids")) o->ids_only = 1;
        else if (!strcmp(a, "--special")) o->special = 1;
        else if (!strcmp(a, "--no-bos")) o->no_bos = 1;
        else if (!strcmp(a, "--time")) o->time = 1;
        else if (!strcmp(a, "-m") || !strcmp(a, "-z") || !strcmp(a, "-i") || !strcmp(a, "-f")) {
            if (i + 1 >= argc) return usage_error("this option needs a value:", a);
            const char *v = argv[++i];
            if (a[1] == 'm') o->model = v;
            else if (a[1] == 'z') o->tokenizer = v;
            else if (a[1] == 'i') o->text = v;
            else o->file = v;
        } else return usage_error(a[0] == '-' ? "unknown option" : "unexpected argument", a);
    }
    if (!o->model) return usage_error("missing -m model.mlb", NULL);
    if (!o->text == !o->file) return usage_error("give the text with exactly one of -i TEXT and -f FILE", NULL);
    return ML_CLI_RUN;
}

/* The whole of path (- = stdin), NUL-terminated, into *out. Prints why not. */
static int read_text(const char *path, char **out) {
    FILE *f = strcmp(path, "-") ? ml_fopen(path, "rb") : stdin;
    if (f == stdin) ml_stdin_binary();
    struct stat st;
    if (!f || (f != stdin && (fstat(fileno(f), &st) || S_ISDIR(st.st_mode)))) {
        fprintf(stderr, "ml_tokenize: cannot read the text '%s': %s\n", path, f ? "a directory" : strerror(errno));
        if (f && f != stdin) fclose(f);
        return 0;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = cap > SIZE_MAX / 2 - 1 ? NULL : realloc(buf, 2 * cap + 1); /* 32-bit: 2 * cap wraps */
            if (!b) free(buf);
            buf = b;
            cap *= 2;
        }
    }
    int bad = !buf || ferror(f);
    if (f != stdin) fclose(f);
    if (bad) {
        fprintf(stderr, "ml_tokenize: reading the text '%s' failed (%s)\n", path, buf ? "read error" : "out of memory");
        free(buf);
        return 0;
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        fprintf(stderr, "ml_tokenize: the text '%s' holds a NUL byte (at byte %zu)\n", path, strlen(buf));
        free(buf);
        return 0;
    }
    *out = buf;
    return 1;
}

/* Length of the valid UTF-8 character at p (n bytes left), 0 if none. */
static size_t utf8_char(const unsigned char *p, size_t n) {
    size_t k = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3 : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    if (!k || k > n) return 0;
    for (size_t j = 1; j < k; j++)
        if ((p[j] & 0xC0) != 0x80) return 0;
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) || (p[0] == 0xF0 && p[1] < 0x90) ||
        (p[0] == 0xF4 && p[1] > 0x8F))
        return 0;
    return k;
}

static void print_piece(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = p[i] >= 0x80 ? utf8_char(p + i, n - i) : 0;
        if (k) {
            fwrite(p + i, 1, k, stdout);
            i += k;
            continue;
        }
        unsigned c = p[i++];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c < 0x20 || c >= 0x7F || c == '\'' || c == '\\') printf("\\x%02X", c);
        else putchar((int)c);
    }
}

int ml_main(int argc, char **argv) {
    ml_cli_clean_on_signal();
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != ML_CLI_RUN) return rc;
    char gguf_mlb[4096]; /* -m X.gguf: its cached .mlb */
    if (!(o.model = ml_cli_model_path("ml_tokenize", o.model, gguf_mlb, sizeof gguf_mlb))) return ML_EXIT_FAIL;
    /* The model only for its vocab size: a one-position context, one thread;
     * the tokenizer apart, so that its failure is told as such. */
    lml_model_options mo = {.no_tokenizer = 1, .threads = 1, .context = 1, .batch = 1, .load = LML_LOAD_MMAP};
    lml_error err = {{0}};
    lml_model *m;
    lml_status s = lml_model_open(&m, o.model, &mo, &err);
    if (s) {
        fprintf(stderr, "ml_tokenize: loading the model failed (%s): %s\n", ml_cli_status_name(s), err.message);
        return ML_EXIT_FAIL;
    }
    if ((s = lml_model_load_tokenizer(m, o.tokenizer, &err))) {
        fprintf(stderr, "ml_tokenize: loading the tokenizer failed (%s): %s\n", ml_cli_status_name(s), err.message);
        lml_model_close(m);
        return s == LML_E_ARG ? ML_EXIT_USAGE : ML_EXIT_FAIL;
    }
    lml_model_info info;
    lml_model_get_info(m, &info);
    char *owned = NULL;
    const char *text = o.text;
    int *ids = NULL, n = 0;
    rc = ML_EXIT_FAIL;
    if (o.file) {
        if (!read_text(o.file, &owned)) goto done;
        text = owned;
    }
    size_t cap = lml_tokenize_capacity(text);
    ids = malloc(cap * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "ml_tokenize: out of memory for the tokens\n");
        goto done;
    }
    double t0 = ml_cli_now();
    s = (o.special ? lml_tokenize_special : lml_tokenize)(m, text, !o.no_bos && info.add_bos, ids, cap, &n, &err);
    if (s) {
        fprintf(stderr, "ml_tokenize: tokenizing failed (%s): %s\n", ml_cli_status_name(s), err.message);
        goto done;
    }
    double dt = ml_cli_now() - t0;
    if (o.time)
        fprintf(stderr, "ml_tokenize: %zu bytes -> %d tokens in %.3f ms (%.1f MB/s)\n", strlen(text), n, dt * 1e3,
                dt > 0 ? (double)strlen(text) / dt / 1e6 : 0.0);
    for (int i = 0; i < n; i++) {
        if (o.ids_only) {
            printf(i ? " %d" : "%d", ids[i]);
            continue;
        }
        size_t len = 0;
        const char *p = lml_token_text(m, ids[i], &len);
        printf("%6d -> '", ids[i]);
        print_piece((const unsigned char *)p, len);
        fputs("'\n", stdout);
    }
    if (o.ids_only) putchar('\n');
    rc = fflush(stdout) || ferror(stdout) ? ML_EXIT_FAIL : ML_EXIT_OK;
    if (rc) fprintf(stderr, "ml_tokenize: writing the output failed\n");
done:
    free(ids);
    free(owned);
    lml_model_close(m);
    return rc;
}

/* Load a model, run a prompt, stream the tokens: the smallest program on
 * include/legacy_ml.h. Its output is ml_run's for the same arguments
 * (ml_run -m MODEL -z TOKENIZER -i PROMPT -n STEPS -s SEED).
 *   cc stream.c $(pkg-config --cflags --libs legacy-ml) -o stream
 *   ./stream model.mlb tokenizer.bin "Once upon a time" 64 42
 *   ./stream model.gguf - "Once upon a time"   (-: the model's own tokenizer) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <legacy_ml.h>

/* Print a piece as ml_run does: raw control bytes (a byte token can be any
 * byte) are dropped, whitespace and UTF-8 kept. Returns 0: never stop. */
static int print_piece(void *ud, int token, const char *piece, size_t len) {
    (void)ud, (void)token;
    for (size_t i = 0; piece && i < len; i++) {
        unsigned char c = (unsigned char)piece[i];
        if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r') putchar(c);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s model.mlb|model.gguf tokenizer.bin|- prompt [steps [seed]]\n", argv[0]);
        return 2;
    }
    lml_error err;
    lml_model *m;
    lml_model_options opts = {.tokenizer = strcmp(argv[2], "-") ? argv[2] : NULL};
    if (lml_model_open(&m, argv[1], &opts, &err)) {
        fprintf(stderr, "stream: %s\n", err.message);
        return 1;
    }
    lml_model_info info;
    lml_model_get_info(m, &info);
    int steps = argc > 4 ? atoi(argv[4]) : 256;
    if (steps < 1 || steps > info.context) steps = info.context;
    lml_sampler_options so = lml_sampler_defaults();
    so.seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 42;

    int *prompt = malloc(lml_tokenize_capacity(argv[3]) * sizeof *prompt);
    int n_prompt = 0, rc = 1;
    lml_callbacks cb = {.on_token = print_piece};
    if (!prompt || lml_tokenize(m, argv[3], 1, prompt, lml_tokenize_capacity(argv[3]), &n_prompt, &err) ||
        lml_generate(m, prompt, n_prompt, steps, &so, &cb, NULL, &err)) {
        fprintf(stderr, "stream: %s\n", prompt ? err.message : "out of memory");
    } else {
        printf("\n");
        rc = 0;
    }
    free(prompt);
    lml_model_close(m);
    return rc;
}

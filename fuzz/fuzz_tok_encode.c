/* libFuzzer target: tokenizer encode (and decode round trip) on any bytes. */
#include "fuzz/fuzz_targets.h"

static fuzz_tokenizers tokenizers;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_tokenizers_load(&tokenizers);
    if (tokenizers.n == 0) {
        fprintf(stderr, "fuzz_tok_encode: no tokenizer loaded\n");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_tok_encode(&tokenizers, data, size);
    return 0;
}

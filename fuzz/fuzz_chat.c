/* libFuzzer target: the chat templates over a model's chat_template text (fuzz_targets.h). */
#include "fuzz/fuzz_targets.h"

static fuzz_chat_vocabs vocabs;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_chat_vocabs_load(&vocabs);
    if (vocabs.n < 2) {
        fprintf(stderr, "fuzz_chat: the built-in vocabularies did not load\n");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_chat(&vocabs, data, size);
    return 0;
}

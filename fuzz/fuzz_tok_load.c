/* libFuzzer target: the tokenizer.bin loader (input: u32 vocab + the file). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_tok_load(data, size);
    return 0;
}

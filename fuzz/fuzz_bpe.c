/* libFuzzer target: the BPE tokenizer file loader and encoder (fuzz_targets.h). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_bpe(data, size);
    return 0;
}

/* libFuzzer target: the GGUF reader and the GGUF -> .mlb converter. */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_gguf(data, size);
    return 0;
}

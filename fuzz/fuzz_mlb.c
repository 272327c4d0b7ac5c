/* libFuzzer target: the .mlb loader (and a forward step on what loads). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_mlb(data, size);
    return 0;
}

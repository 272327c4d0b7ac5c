/* libFuzzer target: ml_run's argument parser (NUL-separated arguments). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_cli(data, size);
    return 0;
}

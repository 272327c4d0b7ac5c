/* libFuzzer target: ml_server's JSON parser (app/json.c). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_json(data, size);
    return 0;
}

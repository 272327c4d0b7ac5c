/* libFuzzer target: ml_server's HTTP request-head parser (app/http.c). */
#include "fuzz/fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_http(data, size);
    return 0;
}

#include "CFuzzDriver.h"

// Weak, so the normal build (without libFuzzer) links; it is only called when present.
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t))
    __attribute__((weak));

int strata_fuzz_run(int argc, char **argv, int (*callback)(const uint8_t *data, size_t size)) {
    if (!LLVMFuzzerRunDriver) return -1;
    return LLVMFuzzerRunDriver(&argc, &argv, callback);
}

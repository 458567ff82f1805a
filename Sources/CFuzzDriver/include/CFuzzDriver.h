#ifndef STRATA_CFUZZDRIVER_H
#define STRATA_CFUZZDRIVER_H
#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's driver over `callback` (`LLVMFuzzerRunDriver`, linked by -sanitize=fuzzer);
/// returns -1 when the binary was built without it.
int strata_fuzz_run(int argc, char **argv, int (*callback)(const uint8_t *data, size_t size));
#endif

#ifndef CSWAGGERUI_H
#define CSWAGGERUI_H

#include <stddef.h>

/// One file of the vendored Swagger UI build (swagger-ui/ beside this target's source),
/// embedded in the binary.
typedef struct {
    /// The file's name, as served under `/docs/`.
    const char *name;
    /// Its first byte, in the binary's read-only data.
    const unsigned char *start;
    /// One past its last byte.
    const unsigned char *end;
} strata_swagger_ui_file;

/// The embedded files, `*count` of them (a constant table).
const strata_swagger_ui_file *strata_swagger_ui_files(size_t *count);

#endif

// The vendored Swagger UI build, assembled into the binary with `.incbin`: the assembler copies
// each file's bytes into read-only data between two labels, so the files cost no compile time and
// the executable needs nothing beside it (a container image, `swift run`, any install path).
// The files are found through the target's header search path (swagger-ui/, see Package.swift).
// A change to them is not tracked as a dependency of this file: scripts/fetch-assets touches this
// file after vendoring so that the next build assembles it again.

#include "CSwaggerUI.h"

#define STRATA_EMBED(symbol, file)                                                                  \
    __asm__(".pushsection .rodata." #symbol ",\"a\",@progbits\n"                                    \
            ".balign 16\n"                                                                          \
            ".globl " #symbol "\n"                                                                  \
            ".hidden " #symbol "\n"                                                                 \
            #symbol ":\n"                                                                           \
            ".incbin \"" file "\"\n"                                                                \
            ".globl " #symbol "_end\n"                                                              \
            ".hidden " #symbol "_end\n"                                                             \
            #symbol "_end:\n"                                                                       \
            ".byte 0\n"                                                                             \
            ".popsection\n");                                                                       \
    extern const unsigned char symbol[] __attribute__((visibility("hidden")));                      \
    extern const unsigned char symbol##_end[] __attribute__((visibility("hidden")));

STRATA_EMBED(strata_swagger_ui_bundle_js, "swagger-ui-bundle.js")
STRATA_EMBED(strata_swagger_ui_css, "swagger-ui.css")
STRATA_EMBED(strata_swagger_ui_license, "LICENSE")
STRATA_EMBED(strata_swagger_ui_bundle_license, "swagger-ui-bundle.js.LICENSE.txt")
STRATA_EMBED(strata_swagger_ui_version, "VERSION")

static const strata_swagger_ui_file files[] = {
    {"swagger-ui-bundle.js", strata_swagger_ui_bundle_js, strata_swagger_ui_bundle_js_end},
    {"swagger-ui.css", strata_swagger_ui_css, strata_swagger_ui_css_end},
    {"LICENSE", strata_swagger_ui_license, strata_swagger_ui_license_end},
    {"swagger-ui-bundle.js.LICENSE.txt", strata_swagger_ui_bundle_license, strata_swagger_ui_bundle_license_end},
    {"VERSION", strata_swagger_ui_version, strata_swagger_ui_version_end},
};

const strata_swagger_ui_file *strata_swagger_ui_files(size_t *count) {
    *count = sizeof files / sizeof files[0];
    return files;
}

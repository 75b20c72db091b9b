/* Build identity: which package version and which C API this engine was compiled as. */
#include "runner.h"

/* CMake passes package.json's "version" so there is one owner of that fact. */
#ifndef RUNNER_VERSION_STRING
#error "RUNNER_VERSION_STRING must be defined by the build (native/CMakeLists.txt)"
#endif

const char *runner_version(void) {
    return RUNNER_VERSION_STRING;
}

int runner_abi_version(void) {
    return RUNNER_ABI_VERSION;
}

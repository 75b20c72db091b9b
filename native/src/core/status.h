/* Failing with a message: every engine function that refuses something says what, through this. */
#ifndef RUNNER_CORE_STATUS_H
#define RUNNER_CORE_STATUS_H

#include <stdint.h>

#include "runner.h"

/* Formats into err (if any, NUL-terminated, truncated to err_len) and returns the status. */
runner_status runner_fail(char *err, int32_t err_len, runner_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif

/* Status codes and their messages: the one table of stable code names the seam reports. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

runner_status runner_fail(char *err, int32_t err_len, runner_status status, const char *fmt, ...) {
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, (size_t)err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

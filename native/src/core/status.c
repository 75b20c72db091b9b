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

static const char *const status_codes[RUNNER_STATUS_COUNT] = {
#define RUNNER_STATUS_CODE_(constant, value, code, doc) [constant] = code,
    RUNNER_STATUS_LIST(RUNNER_STATUS_CODE_)
#undef RUNNER_STATUS_CODE_
};

const char *runner_status_code(int32_t status) {
    return status >= 0 && status < RUNNER_STATUS_COUNT ? status_codes[status] : NULL;
}

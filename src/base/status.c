/* commsched — status strings and the first-error-wins error struct. */
#include "commsched/status.h"

#include <stdio.h>
#include <string.h>

const char *commsched_status_str(commsched_status status)
{
    switch (status) {
#define XX(code, text)                                                         \
    case COMMSCHED_##code:                                                     \
        return text;
        COMMSCHED_STATUS_MAP(XX)
#undef XX
    }
    return "unknown status";
}

const char *commsched_status_name(commsched_status status)
{
    switch (status) {
#define XX(code, text)                                                         \
    case COMMSCHED_##code:                                                     \
        return #code;
        COMMSCHED_STATUS_MAP(XX)
#undef XX
    }
    return "UNKNOWN";
}

void commsched_error_clear(commsched_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

commsched_status commsched_error_set(commsched_error *err,
                                     commsched_status status, const char *path,
                                     const char *fmt, ...)
{
    if (!err || err->status != COMMSCHED_OK)
        return status;
    err->status = status;
    err->line = err->column = 0;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    return status;
}

char *commsched_error_format(const commsched_error *err, const char *file,
                             char *buf, unsigned long size)
{
    const char *f = file ? file : "";
    const char *sep = file ? ": " : "";
    if (size == 0)
        return buf;
    if (!err || err->status == COMMSCHED_OK)
        snprintf(buf, size, "%s%sno error", f, sep);
    else if (err->line > 0)
        snprintf(buf, size, "%s:%d:%d: %s", file ? file : "<input>",
                 err->line, err->column, err->text);
    else if (err->path[0])
        snprintf(buf, size, "%s%s%s: %s", f, sep, err->path, err->text);
    else
        snprintf(buf, size, "%s%s%s", f, sep, err->text);
    return buf;
}

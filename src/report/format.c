/* commsched — the public face of the figure formatters every report uses
 * (report.h), so tools print bytes and times exactly as the reports do. */
#include "commsched/report.h"

#include "util.h"

const char *commsched_format_bytes(double bytes, char *buf, size_t size)
{
    return cs_fmt_bytes(bytes, buf, size);
}

const char *commsched_format_time(double ns, char *buf, size_t size)
{
    return cs_fmt_time(ns, 3, "us", buf, size);
}

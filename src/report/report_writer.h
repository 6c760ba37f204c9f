/* commsched — what every JSON report shares (the simulation, estimates and
 * measured-run reports and both Chrome traces): a writer on the heap, the
 * numbers' precision, the error wording, and the one Chrome-trace (Perfetto)
 * event writer. Not installed; src/report and src/runtime use it. */
#ifndef COMMSCHED_REPORT_WRITER_H
#define COMMSCHED_REPORT_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "commsched/status.h"
#include "json_writer.h"

/* Non-integral figures in reports: 12 significant digits, stable and
 * readable (integral ones print as integers). */
#define CS_REPORT_PRECISION 12

/* A writer on out (the struct holds a 64 KiB buffer, so it lives on the
 * heap). NULL, with ENOMEM in err, when it cannot be allocated. */
cs_jw *cs_report_writer(FILE *out, commsched_error *err);

/* Flushes and frees w; the status, with a message naming `what` ("report",
 * "trace"): EINVAL for a name that is not UTF-8 or a value JSON cannot
 * hold, EIO when the stream refused a write. */
commsched_status cs_report_finish(cs_jw *w, const char *what,
                                  commsched_error *err);

/* ---- Chrome trace event format (Perfetto, chrome://tracing) ------------
 * A trace is {"displayTimeUnit": "ns", "otherData": {...}, "traceEvents":
 * [...]}, one event a line. Every event writes its keys in one order:
 * name, cat, ph, id, pid, tid, ts, dur, then bp or args. Times are given
 * in ns and written in µs, as the format requires. */

/* Starts the trace and its "otherData" object with "format": format; the
 * caller adds its own keys (cs_jw_key...) before cs_trace_events. */
cs_jw *cs_trace_begin(FILE *out, const char *format, commsched_error *err);
/* Closes "otherData" and opens "traceEvents". */
void cs_trace_events(cs_jw *w);
/* Ends the events and the document; then as cs_report_finish. */
commsched_status cs_trace_end(cs_jw *w, commsched_error *err);

/* Metadata ("ph": "M"): what is process_name, thread_name,
 * process_sort_index or thread_sort_index; its one argument is
 * {"name": str} for names, {"sort_index": index} for orders. */
void cs_trace_name(cs_jw *w, const char *what, int pid, int tid,
                   const char *name);
void cs_trace_sort_index(cs_jw *w, const char *what, int pid, int tid,
                         int64_t index);

/* A complete event ("ph": "X") from ts_ns lasting dur_ns; leaves its
 * "args" object open for the caller's keys, closed by cs_trace_slice_end. */
void cs_trace_slice_begin(cs_jw *w, const char *name, const char *cat,
                          int pid, int tid, double ts_ns, double dur_ns);
void cs_trace_slice_end(cs_jw *w);

/* A flow event: ph "s" (start) or "f" (finish). A finish with bp_enclosing
 * binds to the slice enclosing ts ("bp": "e"); without, to the next slice
 * that starts at ts. */
void cs_trace_flow(cs_jw *w, const char *name, const char *cat, char ph,
                   uint64_t id, int pid, int tid, double ts_ns,
                   int bp_enclosing);

/* A counter ("ph": "C") with one series: {"key": value}. */
void cs_trace_counter(cs_jw *w, const char *name, int pid, double ts_ns,
                      const char *key, int64_t value);

#endif /* COMMSCHED_REPORT_WRITER_H */

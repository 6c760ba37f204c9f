/* commsched — what the JSON reports share (report_writer.h), and the one
 * Chrome-trace writer: the simulation's trace (report_json.c) and the
 * measured run's (src/runtime/run_report.c) lay out their events alike. */
#include "report_writer.h"

#include <stdlib.h>

commsched_status cs_report_finish(cs_jw *w, const char *what,
                                  commsched_error *err)
{
    commsched_status st = cs_jw_finish(w);
    cs_jw_error why = w->error;
    free(w);
    if (st == COMMSCHED_OK)
        return COMMSCHED_OK;
    if (why == CS_JW_EUTF8)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "a name is not valid UTF-8: the %s is "
                                   "incomplete",
                                   what);
    if (why == CS_JW_EIO)
        return commsched_error_set(err, COMMSCHED_EIO, NULL,
                                   "cannot write the %s", what);
    if (why == CS_JW_ENUMBER)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "the %s holds a non-finite number, which "
                                   "JSON cannot",
                                   what);
    return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                               "internal error: the %s's JSON is misnested",
                               what);
}

cs_jw *cs_report_writer(FILE *out, commsched_error *err)
{
    cs_jw *w = malloc(sizeof *w);
    if (!w)
        commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
    else
        cs_jw_init(w, out);
    return w;
}

static double us(double ns) { return ns / 1000.0; }

cs_jw *cs_trace_begin(FILE *out, const char *format, commsched_error *err)
{
    cs_jw *w = cs_report_writer(out, err);
    if (!w)
        return NULL;
    cs_jw_object(w);
    cs_jw_layout(w, "\n", ": ");
    cs_jw_key(w, "displayTimeUnit");
    cs_jw_string(w, "ns");
    cs_jw_key(w, "otherData");
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key(w, "format");
    cs_jw_string(w, format);
    return w;
}

void cs_trace_events(cs_jw *w)
{
    cs_jw_end(w);
    cs_jw_key(w, "traceEvents");
    cs_jw_array(w);
    cs_jw_layout(w, "\n", ":");
    cs_jw_raw(w, "\n");
}

commsched_status cs_trace_end(cs_jw *w, commsched_error *err)
{
    cs_jw_raw(w, "\n");
    cs_jw_end(w);
    cs_jw_end(w);
    cs_jw_raw(w, "\n");
    return cs_report_finish(w, "trace", err);
}

/* name, cat (when given), ph: the keys every event starts with. */
static void event(cs_jw *w, const char *name, const char *cat, const char *ph)
{
    cs_jw_object(w);
    cs_jw_layout(w, "", ":");
    cs_jw_key(w, "name");
    cs_jw_string(w, name);
    if (cat) {
        cs_jw_key(w, "cat");
        cs_jw_string(w, cat);
    }
    cs_jw_key(w, "ph");
    cs_jw_string(w, ph);
}

static void key_time(cs_jw *w, const char *key, double ns)
{
    cs_jw_key(w, key);
    cs_jw_number_g_or_null(w, us(ns), CS_REPORT_PRECISION);
}

static void meta(cs_jw *w, const char *what, int pid, int tid)
{
    event(w, what, NULL, "M");
    cs_jw_key_int(w, "pid", pid);
    cs_jw_key_int(w, "tid", tid);
    cs_jw_key(w, "args");
    cs_jw_object(w);
}

void cs_trace_name(cs_jw *w, const char *what, int pid, int tid,
                   const char *name)
{
    meta(w, what, pid, tid);
    cs_jw_key(w, "name");
    cs_jw_string(w, name);
    cs_jw_end(w);
    cs_jw_end(w);
}

void cs_trace_sort_index(cs_jw *w, const char *what, int pid, int tid,
                         int64_t index)
{
    meta(w, what, pid, tid);
    cs_jw_key_int(w, "sort_index", index);
    cs_jw_end(w);
    cs_jw_end(w);
}

void cs_trace_slice_begin(cs_jw *w, const char *name, const char *cat,
                          int pid, int tid, double ts_ns, double dur_ns)
{
    event(w, name, cat, "X");
    cs_jw_key_int(w, "pid", pid);
    cs_jw_key_int(w, "tid", tid);
    key_time(w, "ts", ts_ns);
    key_time(w, "dur", dur_ns);
    cs_jw_key(w, "args");
    cs_jw_object(w);
}

void cs_trace_slice_end(cs_jw *w)
{
    cs_jw_end(w);
    cs_jw_end(w);
}

void cs_trace_flow(cs_jw *w, const char *name, const char *cat, char ph,
                   uint64_t id, int pid, int tid, double ts_ns,
                   int bp_enclosing)
{
    event(w, name, cat, ph == 's' ? "s" : "f");
    cs_jw_key(w, "id");
    cs_jw_uint(w, id);
    cs_jw_key_int(w, "pid", pid);
    cs_jw_key_int(w, "tid", tid);
    key_time(w, "ts", ts_ns);
    if (ph != 's' && bp_enclosing) {
        cs_jw_key(w, "bp");
        cs_jw_string(w, "e");
    }
    cs_jw_end(w);
}

void cs_trace_counter(cs_jw *w, const char *name, int pid, double ts_ns,
                      const char *key, int64_t value)
{
    event(w, name, NULL, "C");
    cs_jw_key_int(w, "pid", pid);
    key_time(w, "ts", ts_ns);
    cs_jw_key(w, "args");
    cs_jw_object(w);
    cs_jw_key_int(w, key, value);
    cs_jw_end(w);
    cs_jw_end(w);
}

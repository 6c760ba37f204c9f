/* Fuzz harness: the HLO text importer (src/import/hlo.h) on the bytes
 * as given, no file in the way. It either fails with an error located in
 * the text (a line and column; only running out of memory or an
 * importer limit goes without) or returns a graph that saves and loads
 * back equal and that the default pipeline optimizes. */
#include "fuzz.h"

#include "hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    hlo_stats st;
    commsched_status s = hlo_import_text((const char *)data, size, &g, &st,
                                         &err);
    if (s != COMMSCHED_OK) {
        FUZZ_CHECK(g == NULL, "failed import returned a graph");
        FUZZ_CHECK(s != COMMSCHED_EINTERNAL, "internal error: %s", err.text);
        FUZZ_CHECK(err.status == s && err.text[0],
                   "a failure without a message (%s)",
                   commsched_status_name(s));
        FUZZ_CHECK(err.line > 0 || s == COMMSCHED_ENOMEM,
                   "an error without a line: %s: %s",
                   commsched_status_name(s), err.text);
        return 0;
    }
    FUZZ_CHECK(st.collectives == st.waits, "%zu collectives, %zu waits",
               st.collectives, st.waits);
    fuzz_check_roundtrip(g, NULL);
    commsched_result *r = NULL;
    s = commsched_optimize(g, NULL, &r, &err);
    FUZZ_CHECK(s == COMMSCHED_OK || s == COMMSCHED_ENOMEM,
               "an imported graph failed optimize: %s: %s: %s",
               commsched_status_name(s), err.path, err.text);
    commsched_result_destroy(r);
    commsched_graph_destroy(g);
    return 0;
}

/* Fuzz harness: the JSON loader. Any bytes load or fail with a located
 * error; what loads saves and loads back to an equal graph. */
#include "fuzz.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    /* The last byte picks the flags, so both finish modes get coverage. */
    unsigned flags = size > 0 && (data[size - 1] & 1) ? COMMSCHED_FINISH_TOPOSORT
                                                      : 0;
    commsched_graph *g = NULL;
    commsched_error err = {0};
    commsched_status st = commsched_graph_load_string(text, flags, &g, &err);
    free(text);
    if (st != COMMSCHED_OK) {
        FUZZ_CHECK(g == NULL, "failed load returned a graph");
        fuzz_check_error(st, &err);
        return 0;
    }
    fuzz_check_roundtrip(g, NULL);
    commsched_graph_destroy(g);
    return 0;
}

/* commsched fuzz harnesses — helpers shared by every harness. */
#include "fuzz.h"

#include <string.h>

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (t) {
        memcpy(t, data, size);
        t[size] = '\0';
    }
    return t;
}

void fuzz_check_error(commsched_status st, const commsched_error *err)
{
    FUZZ_CHECK(st != COMMSCHED_OK, "failure reported as success");
    FUZZ_CHECK(err->status == st, "status %s but err says %s",
               commsched_status_name(st), commsched_status_name(err->status));
    FUZZ_CHECK(err->text[0] != '\0', "%s without a message",
               commsched_status_name(st));
    FUZZ_CHECK(st != COMMSCHED_EINTERNAL, "internal error: %s: %s", err->path,
               err->text);
    if (st == COMMSCHED_EPARSE)
        FUZZ_CHECK(err->line > 0 || strstr(err->text, "NUL") ||
                       strstr(err->text, "end of file") ||
                       strstr(err->text, "UTF-8"),
                   "syntax error without line:column: %s", err->text);
    /* (ESCHEMA may be about the whole document: "expected a graph
     * object"; the file name is its location.) */
    if (st == COMMSCHED_EGRAPH || st == COMMSCHED_EORDER ||
        st == COMMSCHED_ECYCLE)
        FUZZ_CHECK(err->path[0] != '\0', "%s without a location: %s",
                   commsched_status_name(st), err->text);
}

char *fuzz_save(const commsched_graph *g, const uint32_t *order)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    commsched_error err = {0};
    commsched_status st = commsched_graph_save_stream(g, order, NULL, f, &err);
    fclose(f);
    if (st == COMMSCHED_ENOMEM) {
        free(buf);
        return NULL;
    }
    FUZZ_CHECK(st == COMMSCHED_OK, "an accepted graph does not save: %s: %s",
               err.path, err.text);
    return buf;
}

void fuzz_check_roundtrip(const commsched_graph *g, const uint32_t *order)
{
    char *a = fuzz_save(g, order);
    if (!a)
        return;
    commsched_graph *back = NULL;
    commsched_error err = {0};
    commsched_status st = commsched_graph_load_string(a, 0, &back, &err);
    if (st == COMMSCHED_ENOMEM) {
        free(a);
        return;
    }
    FUZZ_CHECK(st == COMMSCHED_OK, "a saved graph does not load: %d:%d %s: %s",
               err.line, err.column, err.path, err.text);
    char why[256] = "";
    if (!order)
        FUZZ_CHECK(commsched_graph_equal(g, back, why, sizeof why),
                   "reloaded graph differs: %s", why);
    char *b = fuzz_save(back, NULL);
    FUZZ_CHECK(!b || strcmp(a, b) == 0, "saving the reloaded graph differs");
    free(b);
    free(a);
    commsched_graph_destroy(back);
}

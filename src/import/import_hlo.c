/* An XLA HLO text module (hlo.h): the file read whole, the graph made by
 * hlo_import_text, its errors located at the line and column of the HLO
 * text, and a note saying what became what. */
#include <stdio.h>
#include <stdlib.h>

#include "hlo.h"
#include "import_internal.h"

int import_hlo(import_diag *d, const char *path,
               const commsched_import_options *o, commsched_graph **out)
{
    (void)o; /* the module says everything: no option applies */
    const char *file = import_file_name(path);
    size_t len = 0;
    char *text = import_read_file(d, path, &len);
    if (!text)
        return IMPORT_INPUT;
    commsched_error err = {0};
    hlo_stats s;
    commsched_status st = hlo_import_text(text, len, out, &s, &err);
    free(text);
    if (st != COMMSCHED_OK)
        return import_report(d, file, &err);
    import_say say;
    FILE *m = import_say_begin(&say, d);
    if (!m)
        return 0;
    fprintf(m,
            "%zu instructions in the entry computation: %zu compute nodes, "
            "%zu collectives (",
            s.entry_instrs, s.compute, s.collectives);
    int first = 1;
    for (int k = 0; k < COMMSCHED_COLL_OP_COUNT; k++)
        if (s.per_op[k]) {
            fprintf(m, "%s%zu %s", first ? "" : ", ", s.per_op[k],
                    commsched_coll_op_str((commsched_coll_op)k));
            first = 0;
        }
    fprintf(m,
            "%s) with %zu waits (%zu from start/done pairs) on %zu groups, "
            "%zu inputs (parameters and constants), %zu instructions read "
            "through; %zu while loops unrolled (%zu iterations), %zu calls "
            "inlined",
            first ? "none" : "", s.waits, s.async_pairs, s.groups, s.inputs,
            s.aliases, s.loops, s.loop_iters, s.calls);
    import_say_end(&say, d, COMMSCHED_IMPORT_NOTE, file);
    return 0;
}

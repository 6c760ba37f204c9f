/* commsched import hlo FILE — an XLA HLO text module (hlo.h): the file
 * read whole, the graph made by hlo_import_text, its errors printed with
 * the line and column of the HLO text, and a note saying what became
 * what. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "hlo.h"

int import_hlo(const char *path, const import_options *o,
               commsched_graph **out)
{
    (void)o; /* the module says everything: no option applies */
    const char *file = path[0] == '-' && path[1] == '\0' ? "<stdin>" : path;
    size_t len = 0;
    char *text = cli_read_file(path, &len);
    if (!text)
        return EXIT_INPUT;
    commsched_error err = {0};
    hlo_stats s;
    commsched_status st = hlo_import_text(text, len, out, &s, &err);
    free(text);
    if (st != COMMSCHED_OK)
        return cli_report(file, &err);
    fprintf(stderr,
            "commsched import: note: %s: %zu instructions in the entry "
            "computation: %zu compute nodes, %zu collectives (",
            file, s.entry_instrs, s.compute, s.collectives);
    int first = 1;
    for (int k = 0; k < COMMSCHED_COLL_OP_COUNT; k++)
        if (s.per_op[k]) {
            fprintf(stderr, "%s%zu %s", first ? "" : ", ", s.per_op[k],
                    commsched_coll_op_str((commsched_coll_op)k));
            first = 0;
        }
    fprintf(stderr,
            "%s) with %zu waits (%zu from start/done pairs) on %zu groups, "
            "%zu inputs (parameters and constants), %zu instructions read "
            "through; %zu while loops unrolled (%zu iterations), %zu calls "
            "inlined\n",
            first ? "none" : "", s.waits, s.async_pairs, s.groups, s.inputs,
            s.aliases, s.loops, s.loop_iters, s.calls);
    return 0;
}

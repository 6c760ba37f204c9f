/* commsched — the bootstrap of a build without MPI: one process, which
 * drives every GPU it is given (boot.h). */
#include <stdlib.h>
#include <string.h>

#include "boot.h"

struct cs_boot {
    int unused;
};

commsched_status cs_boot_init(int *argc, char ***argv, cs_boot **out,
                              commsched_error *err)
{
    (void)argc;
    (void)argv;
    *out = calloc(1, sizeof **out);
    return *out ? COMMSCHED_OK
                : commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                      "out of memory");
}

void cs_boot_fini(cs_boot *b) { free(b); }
int cs_boot_rank(const cs_boot *b) { (void)b; return 0; }
int cs_boot_size(const cs_boot *b) { (void)b; return 1; }
int cs_boot_local_rank(const cs_boot *b) { (void)b; return 0; }
int cs_boot_local_size(const cs_boot *b) { (void)b; return 1; }
const char *cs_boot_library(const cs_boot *b)
{
    (void)b;
    return "single process";
}
int cs_boot_first_failed(cs_boot *b, int failed)
{
    (void)b;
    return failed ? 0 : -1;
}
long long cs_boot_min(cs_boot *b, long long v)
{
    (void)b;
    return v;
}
int cs_boot_bcast(cs_boot *b, void *buf, size_t len, int root)
{
    (void)b;
    (void)buf;
    (void)len;
    (void)root;
    return 0;
}
int cs_boot_gather(cs_boot *b, const void *mine, size_t len, void *all)
{
    (void)b;
    if (all != mine && len)
        memcpy(all, mine, len);
    return 0;
}
int cs_boot_allgather(cs_boot *b, const void *mine, size_t len, void *all)
{
    return cs_boot_gather(b, mine, len, all);
}
void cs_boot_barrier(cs_boot *b) { (void)b; }
void cs_boot_abort(cs_boot *b, int code)
{
    (void)b;
    exit(code);
}

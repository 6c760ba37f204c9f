/* commsched — the bootstrap of the CUDA adaptor over MPI (boot.h): one
 * process per GPU (or per group of GPUs) under mpirun. Only bytes and
 * integers cross here; the data of a step travels over NCCL. Errors of
 * these calls abort the job: they only fail when MPI itself is broken. */
#include <mpi.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"

struct cs_boot {
    int rank, size, local_rank, local_size;
    int we_initialized; /* MPI_Init was ours, so MPI_Finalize is too */
    char library[96];
};

commsched_status cs_boot_init(int *argc, char ***argv, cs_boot **out,
                              commsched_error *err)
{
    *out = NULL;
    cs_boot *b = calloc(1, sizeof *b);
    if (!b)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init(argc, argv) != MPI_SUCCESS) {
            free(b);
            return commsched_error_set(err, COMMSCHED_ELIBRARY, NULL,
                                       "MPI_Init failed");
        }
        b->we_initialized = 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b->size);
    MPI_Comm host;
    b->local_size = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, b->rank,
                            MPI_INFO_NULL, &host) == MPI_SUCCESS) {
        MPI_Comm_rank(host, &b->local_rank);
        MPI_Comm_size(host, &b->local_size);
        MPI_Comm_free(&host);
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    size_t cut = strcspn(lib, ",\n");
    if (cut >= sizeof b->library)
        cut = sizeof b->library - 1;
    memcpy(b->library, lib, cut);
    b->library[cut] = '\0';
    *out = b;
    return COMMSCHED_OK;
}

void cs_boot_fini(cs_boot *b)
{
    if (!b)
        return;
    int fin = 0;
    MPI_Finalized(&fin);
    /* No process leaves before every one has got here, and so has printed
     * what it had to: mpirun kills the whole job when the first process
     * exits non-zero. (MPI_Finalize itself need not wait.) */
    if (b->we_initialized && !fin) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
    }
    free(b);
}

int cs_boot_rank(const cs_boot *b) { return b->rank; }
int cs_boot_size(const cs_boot *b) { return b->size; }
int cs_boot_local_rank(const cs_boot *b) { return b->local_rank; }
int cs_boot_local_size(const cs_boot *b) { return b->local_size; }
const char *cs_boot_library(const cs_boot *b) { return b->library; }

int cs_boot_first_failed(cs_boot *b, int failed)
{
    int mine = failed ? b->rank : b->size, lowest = b->size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return lowest == b->size ? -1 : lowest;
}

long long cs_boot_min(cs_boot *b, long long v)
{
    (void)b;
    long long out = v;
    MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    return out;
}

int cs_boot_bcast(cs_boot *b, void *buf, size_t len, int root)
{
    (void)b;
    if (len > (size_t)INT_MAX)
        return -1;
    if (len)
        MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
    return 0;
}

int cs_boot_gather(cs_boot *b, const void *mine, size_t len, void *all)
{
    (void)b;
    if (len > (size_t)INT_MAX)
        return -1;
    MPI_Gather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    return 0;
}

int cs_boot_allgather(cs_boot *b, const void *mine, size_t len, void *all)
{
    (void)b;
    if (len > (size_t)INT_MAX)
        return -1;
    MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE,
                  MPI_COMM_WORLD);
    return 0;
}

void cs_boot_barrier(cs_boot *b)
{
    (void)b;
    MPI_Barrier(MPI_COMM_WORLD);
}

void cs_boot_abort(cs_boot *b, int code)
{
    (void)b;
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return */
}

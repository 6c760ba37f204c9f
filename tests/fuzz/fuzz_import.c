/* Fuzz harness: an importer (FUZZ_IMPORTER: commsched_import_astra,
 * _chakra, _kineto or _pytorch_et, src/import/; Chakra's reads JSON
 * and binary .et traces, told apart by content, and the Kineto and PyTorch
 * ET importers read gzip or plain JSON). The input becomes a file (a memfd, named
 * through /proc/self/fd, so no disk is touched); the importer either
 * fails with a located error naming the file (and no graph), or returns a
 * graph that saves and loads back equal and that the default pipeline
 * optimizes. */
#include "fuzz.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commsched/import.h"

#ifndef FUZZ_IMPORTER
#error "define FUZZ_IMPORTER (commsched_import_astra, _chakra, _kineto or _pytorch_et)"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-input", 0);
    if (fd < 0)
        return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        done += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    commsched_import_options o;
    commsched_import_options_init(&o);
    /* The first byte picks the options, so each mode is explored: chakra
     * with and without CPU-side ops and its own attributes, kineto for the
     * only device or device 0. */
    unsigned mode = size > 0 ? data[0] : 0;
    o.gpu_only = (mode & 1) != 0;
    o.chakra_fields_only = (mode & 2) != 0;
    o.rank = (mode & 4) ? 0 : -1;
    /* A JSON trace's tree within what the fuzzer's RSS limit allows (an
     * 8 KB gzip input can inflate to megabytes of numbers). */
    o.max_memory = (uint64_t)256 << 20;
    /* What cli_load asks of every input file: a Chakra trace or not. */
    int et = commsched_import_is_chakra_et(path);
    FUZZ_CHECK(et == 0 || et == 1, "commsched_import_is_chakra_et gave %d",
               et);
    commsched_graph *g = NULL;
    commsched_error err = {0};
    commsched_status st = FUZZ_IMPORTER(path, &o, &g, &err);
    close(fd);
    if (st != COMMSCHED_OK) {
        FUZZ_CHECK(g == NULL, "failed import returned a graph");
        FUZZ_CHECK(err.status == st && strncmp(err.text, path,
                                               strlen(path)) == 0,
                   "failed import's error does not name the file: %s: %s",
                   commsched_status_name(st), err.text);
        return 0;
    }
    fuzz_check_roundtrip(g, NULL);
    /* what users do next: the default pipeline on the imported graph,
     * which only running out of memory may fail */
    commsched_result *r = NULL;
    st = commsched_optimize(g, NULL, &r, &err);
    FUZZ_CHECK(st == COMMSCHED_OK || st == COMMSCHED_ENOMEM,
               "an imported graph failed optimize: %s: %s: %s",
               commsched_status_name(st), err.path, err.text);
    commsched_result_destroy(r);
    commsched_graph_destroy(g);
    return 0;
}

/* Fuzz harness: a device profile file (docs/COST.md), its "measured"
 * tables included (commsched_device_load_file, commsched_costs_load_file,
 * src/model/device.c and measured.c). The input becomes a file (a memfd);
 * each loader either fails with a located error, or loads: then every
 * lookup gives a finite, non-negative figure or none, and the profile
 * written back (commsched_profile_save) loads again to the same device
 * and the same lookups, bit for bit. */
#include "fuzz.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commsched/cost.h"

/* A memfd holding data, named through /proc/self/fd in path. */
static int as_file(const void *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz-profile", 0);
    if (fd < 0)
        return -1;
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, (const char *)data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* Probes: sizes from 0 to past any line's reach, every op at a few
 * group sizes, kernel keys the seeds use at a few positions. */
#define N_PROBES 64
static void probe(const commsched_costs *c, double out[N_PROBES])
{
    static const char *const keys[] = {"", "k", "mm<float>", "Memcpy DtoD "};
    int n = 0;
    for (int op = 0; op < COMMSCHED_COLL_OP_COUNT && n < 40; op++)
        for (uint32_t ranks = 2; ranks <= 8 && n < 40; ranks *= 2) {
            double ns = -1;
            commsched_cost_source s = commsched_costs_price_collective(
                c, (commsched_coll_op)op, ranks, (double)(1u << (3 * n % 31)),
                &ns);
            FUZZ_CHECK(s == COMMSCHED_SOURCE_NONE ||
                           (ns >= 0 && isfinite(ns)),
                       "collective priced at %g ns", ns);
            out[n++] = s == COMMSCHED_SOURCE_NONE ? -1 : ns;
        }
    for (int k = 0; k < 4; k++)
        for (long pos = -1; pos < 5 && n < N_PROBES; pos++) {
            double ns = -1;
            commsched_cost_source s =
                commsched_costs_price_kernel(c, keys[k], pos * 7, &ns);
            FUZZ_CHECK(s == COMMSCHED_SOURCE_NONE ||
                           (ns >= 0 && isfinite(ns)),
                       "kernel priced at %g ns", ns);
            out[n++] = s == COMMSCHED_SOURCE_NONE ? -1 : ns;
        }
    while (n < N_PROBES)
        out[n++] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], back_path[64];
    int fd = as_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    commsched_device d;
    commsched_costs *c = NULL;
    commsched_error err = {0};
    commsched_status st = commsched_device_load_file(path, &d, &err);
    if (st != COMMSCHED_OK) {
        fuzz_check_error(st, &err);
        close(fd);
        return 0;
    }
    memset(&err, 0, sizeof err);
    st = commsched_costs_load_file(path, &c, &err);
    close(fd);
    if (st != COMMSCHED_OK) {
        FUZZ_CHECK(c == NULL, "a failed load returned tables");
        fuzz_check_error(st, &err);
        return 0;
    }
    double before[N_PROBES], after[N_PROBES];
    probe(c, before);
    /* written back and read again: the same device, the same figures */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        commsched_costs_destroy(c);
        return 0;
    }
    st = commsched_profile_save(f, &d, c, &err);
    fclose(f);
    FUZZ_CHECK(st == COMMSCHED_OK || st == COMMSCHED_ENOMEM,
               "a loaded profile did not save: %s", err.text);
    int bfd = st == COMMSCHED_OK
                  ? as_file(text, len, back_path, sizeof back_path)
                  : -1;
    if (bfd >= 0) {
        commsched_device d2;
        commsched_costs *c2 = NULL;
        st = commsched_device_load_file(back_path, &d2, &err);
        FUZZ_CHECK(st == COMMSCHED_OK, "a saved profile did not load: %s",
                   err.text);
        FUZZ_CHECK(d2.peak_flops == d.peak_flops && d2.mem_bw == d.mem_bw &&
                       d2.channels == d.channels &&
                       strcmp(d2.name, d.name) == 0,
                   "the device changed through save and load");
        st = commsched_costs_load_file(back_path, &c2, &err);
        FUZZ_CHECK(st == COMMSCHED_OK && (c2 != NULL) == (c != NULL),
                   "saved tables did not load: %s", err.text);
        probe(c2, after);
        FUZZ_CHECK(memcmp(before, after, sizeof before) == 0,
                   "a lookup changed through save and load");
        commsched_costs_destroy(c2);
        close(bfd);
    }
    free(text);
    commsched_costs_destroy(c);
    return 0;
}

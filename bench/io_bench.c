/* bench/io_bench: the graph file's load and save through the public API,
 * in MB/s of JSON (docs/PERFORMANCE.md, "Load and save"). Loads FILE once
 * (timed), then saves it to /dev/null `repeat` times through the streaming
 * writer and keeps the fastest, so a shared machine's load shows as little
 * as it can. The stream only counts the bytes (fopencookie), so the figure
 * is the writer's, not the disk's. Prints one JSON object. Built by bench/run.sh against the
 * release build's libcommsched:
 *   cc -O2 -Iinclude -Ibuild/release/include bench/io_bench.c \
 *      -Lbuild/release -lcommsched -Wl,-rpath,build/release */
#define _GNU_SOURCE /* fopencookie */
#include <commsched/commsched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

/* CPU seconds of this process: on a shared machine they move far less
 * than wall time (other jobs' time slices are not ours). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ssize_t count_bytes(void *cookie, const char *buf, size_t size)
{
    (void)buf;
    *(long *)cookie += (long)size;
    return (ssize_t)size;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: io_bench FILE.json [repeat]\n");
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 3;
    struct stat sb;
    if (stat(argv[1], &sb) != 0) {
        perror(argv[1]);
        return 2;
    }
    commsched_error err = {0};
    commsched_graph *g = NULL;
    double t0 = now();
    if (commsched_graph_load_file(argv[1], 0, &g, &err) != COMMSCHED_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err.text);
        return 2;
    }
    double load_s = now() - t0, save_s = 0;
    long saved = 0;
    for (int i = 0; i < repeat; i++) {
        long n = 0;
        cookie_io_functions_t io = {NULL, count_bytes, NULL, NULL};
        FILE *f = fopencookie(&n, "w", io);
        if (!f)
            return 1;
        double t = now();
        if (commsched_graph_save_stream(g, NULL, NULL, f, &err) !=
            COMMSCHED_OK) {
            fprintf(stderr, "save: %s\n", err.text);
            return 1;
        }
        fclose(f);
        saved = n;
        t = now() - t;
        if (i == 0 || t < save_s)
            save_s = t;
    }
    printf("{\"bytes\": %lld, \"nodes\": %u, \"load_s\": %.6f, "
           "\"load_mb_s\": %.1f, \"save_bytes\": %ld, \"save_s\": %.6f, "
           "\"save_mb_s\": %.1f}\n",
           (long long)sb.st_size, commsched_graph_node_count(g), load_s,
           (double)sb.st_size / 1e6 / load_s, saved, save_s,
           (double)saved / 1e6 / save_s);
    commsched_graph_destroy(g);
    return 0;
}

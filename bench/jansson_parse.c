/* bench/jansson_parse: jansson's own figures for a graph file, the yardstick
 * of `commsched validate` (docs/PERFORMANCE.md, "Load"): reads the file in
 * one fread, parses it with json_loadb (the flags the loader uses), frees
 * the tree, and prints the seconds of each step as JSON. Peak RSS comes
 * from /usr/bin/time -v around it. Built by bench/run.sh:
 *   cc -O2 bench/jansson_parse.c $(pkg-config --cflags --libs jansson) */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CPU seconds of this process: on a shared machine they move far less
 * than wall time (other jobs' time slices are not ours). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: jansson_parse FILE.json\n");
        return 2;
    }
    double t0 = now();
    FILE *f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        perror(argv[1]);
        return 1;
    }
    long size = ftell(f);
    rewind(f);
    char *text = malloc(size > 0 ? (size_t)size : 1);
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        perror(argv[1]);
        return 1;
    }
    fclose(f);
    double t1 = now();
    json_error_t je;
    json_t *root = json_loadb(text, (size_t)size, JSON_REJECT_DUPLICATES, &je);
    double t2 = now();
    free(text);
    if (!root) {
        fprintf(stderr, "%s:%d:%d: %s\n", argv[1], je.line, je.column,
                je.text);
        return 1;
    }
    json_decref(root);
    double t3 = now();
    printf("{\"bytes\": %ld, \"read_s\": %.6f, \"parse_s\": %.6f, "
           "\"free_s\": %.6f}\n",
           size, t1 - t0, t2 - t1, t3 - t2);
    return 0;
}

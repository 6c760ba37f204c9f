/* Runs a fuzz harness over saved inputs, without libFuzzer: every file
 * named, and every regular file under every directory named. The normal build
 * links this with each harness so `make test` replays every input a fuzzer
 * ever crashed on (tests/fuzz/regressions/) plus the seed corpus.
 * Exits 0 when every input ran; a harness finding aborts. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    fprintf(stderr, "replay %s\n", path);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    (*n)++;
    return 0;
}

/* Every regular file under path (recursively), in readdir order. */
static int run_path(const char *path, long *n)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return S_ISREG(st.st_mode) ? run_file(path, n) : 0;
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return 1;
    }
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        bad |= run_path(sub, n);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv)
{
    long n = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++)
        bad |= run_path(argv[i], &n);
    printf("%ld inputs replayed\n", n);
    return bad;
}

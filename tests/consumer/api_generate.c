/* The generator from C, through the public header only
 * (commsched/generate.h): the preset and family accessors and their ends,
 * the options' defaults, commsched_generate_size agreeing with the graph
 * commsched_generate_transformer builds for every family, progress up to
 * that size, the same bytes from the same options, and the errors only a
 * library caller can reach (the CLI's own are pinned by the generate
 * tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <commsched/commsched.h>

static int failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "api_generate.c:%d: check failed: %s\n",           \
                    __LINE__, #cond);                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

typedef struct progress {
    uint64_t calls, done, total;
    int backwards; /* done ever decreased */
} progress;

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
    progress *p = arg;
    if (p->calls++ && done < p->done)
        p->backwards = 1;
    p->done = done;
    p->total = total;
}

/* The graph saved, as malloc'ed text (NULL when saving fails). */
static char *saved(const commsched_graph *g)
{
    FILE *f = tmpfile();
    if (!f)
        return NULL;
    char *text = NULL;
    long n;
    if (commsched_graph_save_stream(g, NULL, NULL, f, NULL) == COMMSCHED_OK &&
        (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = calloc((size_t)n + 1, 1)) &&
        fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

static void test_tables(void)
{
    static const char *const presets[] = {"llama3-8b", "llama2-70b",
                                          "mixtral-8x7b", "gpt3-175b"};
    for (size_t i = 0; i < 4; i++) {
        const commsched_generate_shape *p = commsched_generate_preset(i);
        CHECK(p && strcmp(p->name, presets[i]) == 0);
        CHECK(commsched_generate_preset_find(presets[i]) == p);
    }
    CHECK(commsched_generate_preset(4) == NULL);
    CHECK(commsched_generate_preset_find("llama3") == NULL);
    CHECK(commsched_generate_preset_find(NULL) == NULL);
    CHECK(commsched_generate_preset(2)->experts == 8);
    CHECK(commsched_generate_preset(1)->ac == 1);

    static const char *const families[] = {"fsdp", "ddp", "tp", "moe", "2d"};
    for (int f = 0; f < COMMSCHED_GENERATE_FAMILY_COUNT; f++) {
        commsched_generate_family fam = (commsched_generate_family)f;
        CHECK(strcmp(commsched_generate_family_name(fam), families[f]) == 0);
        const commsched_generate_shape *d =
            commsched_generate_preset_default(fam);
        CHECK(d && strcmp(d->name, fam == COMMSCHED_GENERATE_MOE
                                       ? "mixtral-8x7b"
                                       : "llama3-8b") == 0);
    }
    CHECK(commsched_generate_family_name(COMMSCHED_GENERATE_FAMILY_COUNT) ==
          NULL);
    CHECK(commsched_generate_family_name((commsched_generate_family)-1) ==
          NULL);
    CHECK(commsched_generate_preset_default(COMMSCHED_GENERATE_FAMILY_COUNT) ==
          NULL);

    commsched_generate_options o;
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_TP, NULL);
    CHECK(o.family == COMMSCHED_GENERATE_TP);
    CHECK(strcmp(o.shape.name, "llama3-8b") == 0 && o.shape.layers == 32);
    CHECK(o.dp == 8 && o.tp == 8 && o.ep == 8 && o.clip == 1 && !o.fine &&
          !o.sp && o.ac == 0 && !o.progress);
    CHECK(o.dtype == COMMSCHED_DTYPE_BFLOAT16 &&
          o.reduce_dtype == COMMSCHED_DTYPE_FLOAT32);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP,
                                    commsched_generate_preset_find(
                                        "llama2-70b"));
    CHECK(o.ac == 1 && o.shape.hidden == 8192);
}

/* Every family, two layers: the estimate is the graph's node count, the
 * name follows the rule, progress reaches the estimate without going
 * back, and a second build gives the same bytes. */
static void test_families(void)
{
    for (int f = 0; f < COMMSCHED_GENERATE_FAMILY_COUNT; f++) {
        commsched_generate_family fam = (commsched_generate_family)f;
        commsched_generate_options o;
        commsched_generate_options_init(&o, fam, NULL);
        o.shape.layers = 2;
        o.fine = f == COMMSCHED_GENERATE_DDP;
        o.sp = f == COMMSCHED_GENERATE_2D;
        commsched_error err = {0};
        double nodes = -2;
        CHECK(commsched_generate_size(&o, &nodes, &err) == COMMSCHED_OK);
        progress p = {0};
        o.progress = on_progress;
        o.progress_arg = &p;
        commsched_graph *g = NULL, *again = NULL;
        CHECK(commsched_generate_transformer(&o, &g, &err) == COMMSCHED_OK);
        o.progress = NULL;
        CHECK(commsched_generate_transformer(&o, &again, &err) ==
              COMMSCHED_OK);
        if (!g || !again) {
            fprintf(stderr, "%s: %s\n", commsched_generate_family_name(fam),
                    err.text);
            failures++;
            commsched_graph_destroy(g);
            commsched_graph_destroy(again);
            continue;
        }
        CHECK(nodes == (double)commsched_graph_node_count(g));
        char name[64];
        snprintf(name, sizeof name, "%s-%s%s%s-2L", o.shape.name,
                 commsched_generate_family_name(fam), o.sp ? "-sp" : "",
                 o.fine ? "-fine" : "");
        CHECK(strcmp(commsched_graph_name(g), name) == 0);
        CHECK(p.calls > 0 && !p.backwards && p.total == (uint64_t)nodes &&
              p.done <= p.total);
        char *a = saved(g), *b = saved(again);
        CHECK(a && b && strcmp(a, b) == 0);
        free(a);
        free(b);
        commsched_graph_destroy(g);
        commsched_graph_destroy(again);
    }
}

/* A bad option: EINVAL with its words, *out NULL, nothing to free. */
static void expect_einval(const commsched_generate_options *o,
                          const char *text, int line)
{
    commsched_error err = {0};
    commsched_graph *g = (commsched_graph *)&err; /* must be reset */
    double nodes = 0;
    commsched_status st = commsched_generate_transformer(o, &g, &err);
    commsched_error err2 = {0};
    commsched_status st2 = commsched_generate_size(o, &nodes, &err2);
    if (st != COMMSCHED_EINVAL || g || strcmp(err.text, text) != 0 ||
        st2 != COMMSCHED_EINVAL || strcmp(err2.text, text) != 0) {
        fprintf(stderr, "api_generate.c:%d: expected EINVAL \"%s\", got %s "
                        "\"%s\" / %s \"%s\"\n", line, text,
                commsched_status_name(st), err.text,
                commsched_status_name(st2), err2.text);
        failures++;
    }
}

static void test_errors(void)
{
    commsched_generate_options o;
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP, NULL);
    o.shape.heads = 0;
    expect_einval(&o, "shape sizes and group sizes must be from 1 to 2^31",
                  __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP, NULL);
    o.dp = -8;
    expect_einval(&o, "shape sizes and group sizes must be from 1 to 2^31",
                  __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_MOE, NULL);
    o.shape.topk = -1;
    expect_einval(&o, "experts and topk must be from 0 to 2^31", __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FAMILY_COUNT,
                                    NULL);
    expect_einval(&o, "unknown family", __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP, NULL);
    o.shape.name = NULL;
    expect_einval(&o, "the shape has no name", __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP, NULL);
    o.dtype = COMMSCHED_DTYPE_NONE;
    expect_einval(&o, "dtype and reduce_dtype must be dtypes with a size",
                  __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_FSDP, NULL);
    o.sp = 1;
    expect_einval(&o, "--sp applies to tp and 2d only", __LINE__);
    commsched_generate_options_init(&o, COMMSCHED_GENERATE_TP, NULL);
    o.tp = 3;
    expect_einval(&o, "heads, ffn (and with --sp, seq x batch) must divide "
                      "by tp", __LINE__);
}

int main(void)
{
    test_tables();
    test_families();
    test_errors();
    if (failures) {
        fprintf(stderr, "api_generate: %d check(s) failed\n", failures);
        return 1;
    }
    printf("api_generate: all ok\n");
    return 0;
}

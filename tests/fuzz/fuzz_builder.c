/* Fuzz harness: the builder API, driven by a byte code (one opcode byte,
 * then its arguments) so every call and argument the C API allows is
 * reachable: any int64 size, NaN and infinite runtimes, empty, unknown and
 * non-UTF-8 names, unknown kinds and enum values, outputs' from lists. A
 * failed add must leave a located error; finish either fails with one or
 * returns a graph that saves and loads back equal. */
#include "fuzz.h"

#include <math.h>
#include <string.h>

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint8_t u8(rd *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static uint64_t raw64(rd *r)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = v << 8 | u8(r);
    return v;
}

static int64_t i64(rd *r)
{
    static const int64_t special[] = {
        0, 1, -1, INT64_C(1) << 53, (INT64_C(1) << 53) + 1, INT64_MAX,
        INT64_MIN, UINT32_MAX, 1 << 24, (1 << 24) + 1, 4096};
    switch (u8(r) % 4) {
    case 0: return u8(r);
    case 1: return (int64_t)u8(r) << 8 | u8(r);
    case 2: return (int64_t)raw64(r);
    default: return special[u8(r) % (sizeof special / sizeof special[0])];
    }
}

static double dbl(rd *r)
{
    static const double special[] = {-1, 0, 0.5, 1e30, 1e31, 1e308};
    switch (u8(r) % 4) {
    case 0: return u8(r);
    case 1: {
        uint64_t b = raw64(r);
        double d;
        memcpy(&d, &b, sizeof d); /* NaN, infinities, denormals */
        return d;
    }
    case 2: return NAN;
    default: return special[u8(r) % (sizeof special / sizeof special[0])];
    }
}

static const char *name(rd *r)
{
    static const char *const pool[] = {
        "a", "b", "c", "d", "e", "f", "g", "h",
        "gr\xc3\xb6\xc3\x9f" "e", "\xff", "\xc3", "", NULL};
    return pool[u8(r) % (sizeof pool / sizeof pool[0])];
}

static const char *op_name(rd *r)
{
    static const char *const pool[] = {
        NULL, "", "mm", "all_reduce", "all_gather", "reduce_scatter",
        "all_to_all", "broadcast", "reduce", "send", "recv", "barrier",
        "bogus", "\xfe"};
    return pool[u8(r) % (sizeof pool / sizeof pool[0])];
}

static void names(rd *r, const char **out, size_t *n, size_t max)
{
    *n = u8(r) % (max + 1);
    for (size_t k = 0; k < *n; k++)
        out[k] = name(r);
}

static void after_add(commsched_status st, const commsched_error *err)
{
    if (st != COMMSCHED_OK)
        fuzz_check_error(st, err);
}

static void add_node(rd *r, commsched_builder *b, commsched_error *err)
{
    const char *in[4], *after[2], *fake[2], *out_names[3];
    commsched_output_spec outs[3];
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.name = name(r);
    s.kind = (commsched_node_kind)(u8(r) % 4);
    s.op = op_name(r);
    s.group = u8(r) & 1 ? name(r) : NULL;
    s.is_sync = u8(r) & 1;
    s.dtype = (commsched_dtype)(u8(r) % (COMMSCHED_DTYPE_COUNT + 1));
    s.reduce_op =
        (commsched_reduce_op)(u8(r) % (COMMSCHED_REDUCE_OP_COUNT + 1));
    names(r, in, &s.n_inputs, 4);
    s.inputs = in;
    size_t n_out = u8(r) % 4;
    for (size_t k = 0; k < n_out; k++) {
        out_names[k] = name(r);
        outs[k].name = out_names[k];
        outs[k].size = i64(r);
        outs[k].alias_of = u8(r) % 3 == 0 ? name(r) : NULL;
    }
    s.outputs = outs;
    s.n_outputs = n_out;
    names(r, after, &s.n_after, 2);
    s.after = after;
    names(r, fake, &s.n_after_fake, 2);
    s.after_fake = fake;
    s.runtime_ns = dbl(r);
    s.flops = dbl(r);
    s.bytes = dbl(r);
    s.gemm_like = u8(r) & 1;
    after_add(commsched_builder_add_node(b, &s, err), err);
    /* an output's from, right or wrong: any output index (one past the
     * last too), names from the pool, repeated or called twice */
    for (int calls = u8(r) % 3; calls > 0; calls--) {
        const char *from[3];
        size_t n_from, output = u8(r) % 4;
        names(r, from, &n_from, 3);
        commsched_error_clear(err);
        after_add(commsched_builder_set_output_from(b, output, from, n_from,
                                                    err),
                  err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = {data, size};
    commsched_builder *b = NULL;
    commsched_error err = {0};
    unsigned flags = u8(&r) & 1 ? COMMSCHED_FINISH_TOPOSORT : 0;
    commsched_status st = commsched_builder_create(name(&r), &b, &err);
    if (st != COMMSCHED_OK) {
        fuzz_check_error(st, &err);
        return 0;
    }
    for (int ops = 0; r.n > 0 && ops < 64; ops++) {
        commsched_error_clear(&err);
        switch (u8(&r) % 4) {
        case 0: {
            const char *n = name(&r);
            int64_t sz = i64(&r), hosts = i64(&r);
            after_add(commsched_builder_add_group(b, n, sz, hosts, &err),
                      &err);
            break;
        }
        case 1: {
            const char *n = name(&r);
            int64_t sz = i64(&r);
            after_add(commsched_builder_add_input(b, n, sz, u8(&r) & 1, &err),
                      &err);
            break;
        }
        case 2: add_node(&r, b, &err); break;
        default:
            after_add(commsched_builder_add_output(b, name(&r), &err), &err);
            break;
        }
    }
    commsched_graph *g = NULL;
    commsched_error_clear(&err);
    st = commsched_builder_finish(b, flags, &g, &err);
    if (st != COMMSCHED_OK) {
        FUZZ_CHECK(g == NULL, "failed finish returned a graph");
        fuzz_check_error(st, &err);
        return 0;
    }
    fuzz_check_roundtrip(g, NULL);
    commsched_graph_destroy(g);
    return 0;
}

/* commsched — --check's element conversions (src/runtime/check.c) and a
 * collective's shape (cs_plan_coll_shape), which need no communication
 * library: the 16-bit float conversions and every kind's casts. What a
 * collective must produce is the host reference's (test_check_ref.c and
 * the MPI tests' check cases). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "commsched/graph.h"
#include "graph_internal.h"
#include "plan.h"

/* ---- conversions --------------------------------------------------------- */

static double put_get(int64_t v, cs_ekind k)
{
    uint16_t h = 0;
    cs_elem_put(&h, 0, k, v);
    return cs_elem_get(&h, 0, k);
}

static uint16_t bits_of(int64_t v, cs_ekind k)
{
    uint16_t h = 0;
    cs_elem_put(&h, 0, k, v);
    return h;
}

static double get_bits(uint16_t h, cs_ekind k)
{
    return cs_elem_get(&h, 0, k);
}

static void test_half(void **state)
{
    (void)state;
    /* Every integer up to 2^11 is exact. */
    for (int64_t v = -2048; v <= 2048; v++)
        assert_true(put_get(v, CS_EK_F16) == (double)v);
    assert_int_equal(bits_of(1, CS_EK_F16), 0x3C00);
    assert_int_equal(bits_of(-2, CS_EK_F16), 0xC000);
    assert_int_equal(bits_of(0, CS_EK_F16), 0x0000);
    /* Above 2^11 the spacing is 2: ties go to the even significand. */
    assert_true(put_get(2049, CS_EK_F16) == 2048);
    assert_true(put_get(2051, CS_EK_F16) == 2052);
    assert_true(put_get(-2049, CS_EK_F16) == -2048);
    assert_true(put_get(4097, CS_EK_F16) == 4096); /* below the tie */
    assert_true(put_get(4099, CS_EK_F16) == 4100); /* above the tie */
    /* 65504 is the largest finite half; 65520 is the tie with 65536,
     * which rounds to even (up) and so overflows. */
    assert_true(put_get(65504, CS_EK_F16) == 65504);
    assert_true(put_get(65519, CS_EK_F16) == 65504);
    assert_int_equal(bits_of(65520, CS_EK_F16), 0x7C00);
    assert_true(put_get(65520, CS_EK_F16) == INFINITY);
    assert_true(put_get(-65520, CS_EK_F16) == -INFINITY);
    assert_true(put_get(INT64_MAX, CS_EK_F16) == INFINITY);
    assert_true(put_get(INT64_MIN, CS_EK_F16) == -INFINITY);
    /* Known bit patterns, subnormals and NaN included. */
    assert_true(get_bits(0x3C00, CS_EK_F16) == 1.0);
    assert_true(get_bits(0xBC00, CS_EK_F16) == -1.0);
    assert_true(get_bits(0x3800, CS_EK_F16) == 0.5);
    assert_true(get_bits(0x3555, CS_EK_F16) == 1365.0 / 4096.0);
    assert_true(get_bits(0x7BFF, CS_EK_F16) == 65504.0);
    assert_true(get_bits(0x0001, CS_EK_F16) == ldexp(1, -24));
    assert_true(get_bits(0x03FF, CS_EK_F16) == ldexp(1023, -24));
    assert_true(get_bits(0x0400, CS_EK_F16) == ldexp(1, -14));
    assert_true(get_bits(0x7C00, CS_EK_F16) == INFINITY);
    assert_true(get_bits(0xFC00, CS_EK_F16) == -INFINITY);
    assert_true(isnan(get_bits(0x7E00, CS_EK_F16)));
    assert_true(signbit(get_bits(0x8000, CS_EK_F16)));
}

static void test_bfloat16(void **state)
{
    (void)state;
    for (int64_t v = -256; v <= 256; v++)
        assert_true(put_get(v, CS_EK_BF16) == (double)v);
    assert_int_equal(bits_of(1, CS_EK_BF16), 0x3F80);
    assert_int_equal(bits_of(-1, CS_EK_BF16), 0xBF80);
    assert_true(put_get(257, CS_EK_BF16) == 256);   /* tie: to even */
    assert_true(put_get(259, CS_EK_BF16) == 260);   /* tie: to even, up */
    assert_true(put_get(-257, CS_EK_BF16) == -256);
    assert_true(put_get(1000, CS_EK_BF16) == 1000); /* 125 * 8 */
    assert_true(put_get(1001, CS_EK_BF16) == 1000);
    assert_true(put_get(1003, CS_EK_BF16) == 1004);
    /* The range is float's: no int64 overflows. Rounding is done once:
     * 2^62 + 2^54 + 1 is above the tie between 2^62 and 2^62 + 2^55, but
     * a double first rounds it to 2^62 + 2^54, the tie itself, which
     * would then go to even, down to 2^62. */
    assert_true(put_get(INT64_MAX, CS_EK_BF16) == ldexp(1, 63));
    assert_true(put_get(INT64_MIN, CS_EK_BF16) == -ldexp(1, 63));
    assert_true(put_get(((int64_t)1 << 62) + ((int64_t)1 << 54) + 1,
                        CS_EK_BF16) == ldexp(1, 62) + ldexp(1, 55));
    assert_true(get_bits(0x3F80, CS_EK_BF16) == 1.0);
    assert_true(get_bits(0xC000, CS_EK_BF16) == -2.0);
    assert_true(get_bits(0x4049, CS_EK_BF16) == 3.140625);
    assert_true(get_bits(0x7F7F, CS_EK_BF16) == ldexp(255, 120));
    assert_true(get_bits(0x0001, CS_EK_BF16) == ldexp(1, -133));
    assert_true(get_bits(0x7F80, CS_EK_BF16) == INFINITY);
    assert_true(isnan(get_bits(0x7FC0, CS_EK_BF16)));
}

/* The other kinds convert as a C cast does: integers wrap. */
static void test_other_kinds(void **state)
{
    (void)state;
    assert_true(cs_elem_as(300, CS_EK_U8) == 44);
    assert_true(cs_elem_as(-1, CS_EK_U8) == 255);
    assert_true(cs_elem_as(65537, CS_EK_U16) == 1);
    assert_true(cs_elem_as(128, CS_EK_I8) == -128);
    assert_true(cs_elem_as(40000, CS_EK_I16) == 40000 - 65536);
    assert_true(cs_elem_as(((int64_t)1 << 32) + 5, CS_EK_I32) == 5);
    assert_true(cs_elem_as(-7, CS_EK_I64) == -7);
    assert_true(cs_elem_as((1 << 24) + 1, CS_EK_F32) == 1 << 24);
    assert_true(cs_elem_as((1 << 24) + 1, CS_EK_F64) == (1 << 24) + 1);
    assert_true(cs_elem_as(2049, CS_EK_F16) == 2048);
    assert_true(cs_elem_as(257, CS_EK_BF16) == 256);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_SUM), CS_RK_SUM);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_AVG), CS_RK_SUM);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_PREMUL_SUM), CS_RK_SUM);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_NONE), CS_RK_SUM);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_PRODUCT), CS_RK_PROD);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_MIN), CS_RK_MIN);
    assert_int_equal(cs_check_rkind(COMMSCHED_REDUCE_MAX), CS_RK_MAX);
}

/* ---- cs_plan_coll_shape -------------------------------------------------- */

/* A float32 collective on group "g" with several inputs or outputs. */
static void add_coll_n(commsched_builder *b, const char *name, const char *op,
                       const char *const *ins, size_t n_in,
                       const commsched_output_spec *outs, size_t n_out)
{
    commsched_error err = {0};
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = op;
    s.group = "g";
    s.dtype = COMMSCHED_DTYPE_FLOAT32;
    s.inputs = ins;
    s.n_inputs = n_in;
    s.outputs = outs;
    s.n_outputs = n_out;
    s.runtime_ns = s.flops = s.bytes = -1;
    if (commsched_builder_add_node(b, &s, &err) != COMMSCHED_OK)
        fail_msg("%s: %s", name, err.text);
}

static void add_coll(commsched_builder *b, const char *name, const char *op,
                     commsched_dtype dt, const char *in, const char *out,
                     int64_t out_size, const char *alias)
{
    commsched_error err = {0};
    const char *ins[1] = {in};
    commsched_output_spec os = {out, out_size, alias};
    commsched_node_spec s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = op;
    s.group = "g";
    s.dtype = dt;
    s.inputs = ins;
    s.n_inputs = 1;
    s.outputs = &os;
    s.n_outputs = 1;
    s.runtime_ns = -1;
    s.flops = -1;
    s.bytes = -1;
    if (commsched_builder_add_node(b, &s, &err) != COMMSCHED_OK)
        fail_msg("%s: %s", name, err.text);
}

static void expect_shape(const cs_plan *p, const commsched_graph *g,
                         const char *name, size_t k, size_t count,
                         int in_place, size_t scratch)
{
    uint32_t v = COMMSCHED_NONE;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            v = i;
    assert_int_not_equal(v, COMMSCHED_NONE);
    cs_coll_shape s = {99, 99, 99};
    cs_plan_coll_shape(p, v, k, &s);
    if (s.count != count || s.in_place != in_place ||
        s.scratch_bytes != scratch)
        fail_msg("%s on %zu ranks: count %zu in_place %d scratch %zu, "
                 "expected %zu %d %zu",
                 name, k, s.count, s.in_place, s.scratch_bytes, count,
                 in_place, scratch);
}

static void test_coll_shape(void **state)
{
    (void)state;
    commsched_builder *b = NULL;
    commsched_error err = {0};
    assert_int_equal(commsched_builder_create("shapes", &b, &err), COMMSCHED_OK);
    assert_int_equal(commsched_builder_add_group(b, "g", 4, 1, &err),
                     COMMSCHED_OK);
    /* Inputs of 64, 256 and 32 bytes, one per in-place collective too. */
    const char *names[] = {"i64", "i256", "i32", "i32b", "ag_ip_in",
                           "rs_ip_in", "a2a_ip_in", "snd_ip_in"};
    const int64_t sizes[] = {64, 256, 32, 32, 256, 256, 256, 64};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(commsched_builder_add_input(b, names[i], sizes[i], 0,
                                                     &err), COMMSCHED_OK);
    const commsched_dtype F32 = COMMSCHED_DTYPE_FLOAT32;
    /* float32 unless said: 4-byte elements. */
    add_coll(b, "ag", "all_gather", F32, "i64", "ag_out", 256, NULL);
    /* Sides that fit the group (docs/FORMAT.md, "Collective sizes") but
     * disagree in the buffers the runtime takes, the largest of each side:
     * two 32-byte inputs gathered into 256, 256 scattered into two 32-byte
     * outputs. */
    {
        const char *two[2] = {"i32", "i32b"};
        commsched_output_spec o = {"ag2_out", 256, NULL};
        add_coll_n(b, "ag_small_in", "all_gather", two, 2, &o, 1);
    }
    add_coll(b, "ag_ip", "all_gather", F32, "ag_ip_in", "ag_ip_v", 0,
             "ag_ip_in");
    add_coll(b, "rs", "reduce_scatter", F32, "i256", "rs_out", 64, NULL);
    {
        const char *one[1] = {"i256"};
        commsched_output_spec o[2] = {{"rs2_out", 32, NULL},
                                      {"rs2b_out", 32, NULL}};
        add_coll_n(b, "rs_small_out", "reduce_scatter", one, 1, o, 2);
    }
    add_coll(b, "rs_ip", "reduce_scatter", F32, "rs_ip_in", "rs_ip_v", 0,
             "rs_ip_in");
    add_coll(b, "a2a", "all_to_all", COMMSCHED_DTYPE_INT64, "i256", "a2a_out",
             256, NULL);
    add_coll(b, "a2a_ip", "all_to_all", F32, "a2a_ip_in", "a2a_ip_v", 0,
             "a2a_ip_in");
    add_coll(b, "snd", "send", COMMSCHED_DTYPE_FLOAT16, "i64", "snd_done", 0,
             NULL);
    add_coll(b, "snd_out", "send", F32, "i64", "snd_out_b", 32, NULL);
    add_coll(b, "snd_ip", "send", F32, "snd_ip_in", "snd_ip_v", 0,
             "snd_ip_in");
    add_coll(b, "rcv", "recv", F32, "i32", "rcv_out", 128, NULL);
    /* An all_reduce of a view: its root (64) is larger than the slice it
     * reduces (32, what it writes). */
    {
        const char *ins[1] = {"i64"};
        commsched_output_spec os[2] = {{"m64", 64, NULL},
                                       {"m64_half", 0, "m64"}};
        commsched_node_spec s;
        memset(&s, 0, sizeof s);
        s.name = "mk";
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.inputs = ins;
        s.n_inputs = 1;
        s.outputs = os;
        s.n_outputs = 2;
        s.runtime_ns = s.flops = s.bytes = -1;
        assert_int_equal(commsched_builder_add_node(b, &s, &err),
                         COMMSCHED_OK);
    }
    add_coll(b, "ar", "all_reduce", F32, "m64_half", "ar_out", 32, NULL);
    commsched_graph *g = NULL;
    if (commsched_builder_finish(b, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("graph: %s %s", err.path, err.text);
    cs_plan p;
    assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
    /* all_gather: count per rank, out holds k of them. 16 in, 64 out. */
    expect_shape(&p, g, "ag", 4, 16, 0, 0);
    expect_shape(&p, g, "ag", 2, 16, 0, 0);  /* 64 / 2 = 32 > 16 */
    expect_shape(&p, g, "ag_small_in", 4, 8, 0, 0);
    expect_shape(&p, g, "ag_ip", 4, 16, 1, 0); /* 64 / 4 */
    expect_shape(&p, g, "ag_ip", 8, 8, 1, 0);
    /* reduce_scatter: 64 in, k blocks; 16 out. */
    expect_shape(&p, g, "rs", 4, 16, 0, 0);
    expect_shape(&p, g, "rs", 8, 8, 0, 0);
    expect_shape(&p, g, "rs_small_out", 4, 8, 0, 0);
    expect_shape(&p, g, "rs_ip", 4, 16, 1, 0);
    /* all_to_all: per peer; int64, 32 elements each side. In place sends
     * from a copy of the whole buffer. */
    expect_shape(&p, g, "a2a", 4, 8, 0, 0);
    expect_shape(&p, g, "a2a_ip", 4, 16, 1, 256);
    expect_shape(&p, g, "a2a_ip", 3, 21, 1, 252); /* 64 / 3, whole blocks */
    /* send: what it sends (float16: 32 elements), never in place, and a
     * scratch to receive the same from the previous rank. */
    expect_shape(&p, g, "snd", 4, 32, 0, 64);
    expect_shape(&p, g, "snd_out", 4, 16, 0, 64);
    expect_shape(&p, g, "snd_ip", 4, 16, 0, 64);
    /* recv: what it receives (32 elements); the scratch sends. */
    expect_shape(&p, g, "rcv", 4, 32, 0, 128);
    /* all_reduce out of place: what both sides hold (the view's root 16
     * elements, the output 8). */
    expect_shape(&p, g, "ar", 4, 8, 0, 0);
    cs_plan_fini(&p);
    commsched_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half),
        cmocka_unit_test(test_bfloat16),
        cmocka_unit_test(test_other_kinds),
        cmocka_unit_test(test_coll_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

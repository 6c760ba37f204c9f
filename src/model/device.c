/* commsched — device profiles: the built-in constant tables and the JSON
 * profile loader (docs/COST.md).
 *
 * The built-ins are const data, not globals that change: the library has no
 * mutable state. NCCL's latency tables (tuning.cc, overlap-landscape.md §5)
 * are the same for every GPU; what differs is the roofline, the channel
 * count, the bus bandwidths and llMaxBws' GPU column. Inductor's knobs
 * (intra_node_bw 300, inter_node_bw 25 GB/s) are Inductor config defaults,
 * not device facts, so every built-in carries them unchanged: the canonical
 * mode then reproduces Inductor's numbers for the chosen GPU generation.
 *
 * The loader is strict like the graph loader: unknown fields, wrong types
 * and out-of-range numbers are errors with a JSON path, so a misspelt field
 * never silently keeps a default. */
#include "commsched/cost.h"

#include <jansson.h>

#include "json_util.h"
#include "util.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEVICE_FORMAT "commsched-device"
#define DEVICE_VERSION 1

/* NCCL's protocol-indexed tables, shared by every built-in. */
#define NCCL_BASE_LAT                                                          \
    {                                                                          \
        {6.8, 14.0, 8.4}, /* tree: LL, LL128, Simple */                        \
        {6.6, 14.0, 8.4}  /* ring */                                           \
    }
#define NCCL_HW_LAT                                                            \
    {                                                                          \
        {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},  /* NVLink: tree, ring */         \
        {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},   /* PCI */                        \
        {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}  /* NET */                        \
    }

static const commsched_device builtins[] = {
    {
        .name = "h100",
        .peak_flops = 989.4e12, /* SXM, dense BF16 */
        .mem_bw = 3.35e12,
        .gpus_per_host = 8,
        .intra_link = COMMSCHED_LINK_NVLINK,
        .ll_max_bw = {141.0, 39.0, 20.4}, /* Hopper-N1, Intel-N2/N4 */
        .inductor_intra_bw = 300.0,
        .inductor_inter_bw = 25.0,
        .channels = 16,
        .bus_bw_intra = 370.0,
        .bus_bw_inter = 50.0, /* 400 Gb/s NIC per GPU */
        .ll128_max_bw_per_channel = 36.7,
        .tree_max_bw_per_channel = 38.7,
        .net_overhead = 1.0,
        .base_lat = NCCL_BASE_LAT,
        .hw_lat = NCCL_HW_LAT,
    },
    {
        .name = "a100",
        .peak_flops = 312e12, /* SXM, dense BF16 */
        .mem_bw = 2.039e12,
        .gpus_per_host = 8,
        .intra_link = COMMSCHED_LINK_NVLINK,
        .ll_max_bw = {87.7, 39.0, 20.4}, /* Ampere-N1, Intel-N2/N4 */
        .inductor_intra_bw = 300.0,
        .inductor_inter_bw = 25.0,
        .channels = 8,
        .bus_bw_intra = 240.0,
        .bus_bw_inter = 25.0, /* 200 Gb/s NIC per GPU */
        .ll128_max_bw_per_channel = 20.0,
        .tree_max_bw_per_channel = 24.0,
        .net_overhead = 1.0,
        .base_lat = NCCL_BASE_LAT,
        .hw_lat = NCCL_HW_LAT,
    },
    {
        .name = "b200",
        .peak_flops = 2250e12, /* dense BF16 */
        .mem_bw = 8.0e12,
        .gpus_per_host = 8,
        .intra_link = COMMSCHED_LINK_NVLINK,
        .ll_max_bw = {282.0, 39.0, 20.4}, /* Blackwell-N1, Intel-N2/N4 */
        .inductor_intra_bw = 300.0,
        .inductor_inter_bw = 25.0,
        .channels = 32,
        .bus_bw_intra = 720.0,
        .bus_bw_inter = 100.0, /* 800 Gb/s NIC per GPU */
        .ll128_max_bw_per_channel = 73.4,
        .tree_max_bw_per_channel = 77.4,
        .net_overhead = 1.0,
        .base_lat = NCCL_BASE_LAT,
        .hw_lat = NCCL_HW_LAT,
    },
};

#define N_BUILTINS (sizeof builtins / sizeof builtins[0])

const commsched_device *commsched_device_builtin(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_BUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

const commsched_device *commsched_device_builtin_at(unsigned i)
{
    return i < N_BUILTINS ? &builtins[i] : NULL;
}

static const char *const link_names[COMMSCHED_LINK_COUNT] = {"nvlink", "pci",
                                                             "net"};
static const char *const algo_names[COMMSCHED_ALGO_COUNT] = {"tree", "ring"};

/* ---- checks ------------------------------------------------------------ */

static commsched_status bad(commsched_error *err, const char *path,
                            const char *what, double v)
{
    return commsched_error_set(err, COMMSCHED_EINVAL, path,
                               "expected %s, got %g", what, v);
}

commsched_status commsched_device_check(const commsched_device *d,
                                        commsched_error *err)
{
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    const struct {
        const char *path;
        double v;
    } positive[] = {
        {"peak_flops", d->peak_flops},
        {"mem_bw", d->mem_bw},
        {"ll_max_bw[0]", d->ll_max_bw[0]},
        {"ll_max_bw[1]", d->ll_max_bw[1]},
        {"ll_max_bw[2]", d->ll_max_bw[2]},
        {"inductor.intra_node_bw", d->inductor_intra_bw},
        {"inductor.inter_node_bw", d->inductor_inter_bw},
        {"nccl.bus_bw_intra", d->bus_bw_intra},
        {"nccl.bus_bw_inter", d->bus_bw_inter},
        {"nccl.ll128_max_bw_per_channel", d->ll128_max_bw_per_channel},
        {"nccl.tree_max_bw_per_channel", d->tree_max_bw_per_channel},
    };
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (!(positive[i].v > 0) || isinf(positive[i].v))
            return bad(err, positive[i].path, "a finite number > 0",
                       positive[i].v);
    if (d->gpus_per_host < 1)
        return bad(err, "gpus_per_host", "an integer >= 1",
                   (double)d->gpus_per_host);
    if (d->channels < 1)
        return bad(err, "nccl.channels", "an integer >= 1",
                   (double)d->channels);
    if (d->intra_link != COMMSCHED_LINK_NVLINK &&
        d->intra_link != COMMSCHED_LINK_PCI)
        return commsched_error_set(err, COMMSCHED_EINVAL, "intra_link",
                                   "expected \"nvlink\" or \"pci\"");
    if (!(d->net_overhead >= 0) || isinf(d->net_overhead))
        return bad(err, "nccl.net_overhead", "a finite number >= 0",
                   d->net_overhead);
    for (int a = 0; a < COMMSCHED_ALGO_COUNT; a++)
        for (int q = 0; q < COMMSCHED_PROTO_COUNT; q++) {
            if (!(d->base_lat[a][q] >= 0) || isinf(d->base_lat[a][q])) {
                snprintf(p, sizeof p, "nccl.base_latency.%s[%d]",
                         algo_names[a], q);
                return bad(err, p, "a finite number >= 0", d->base_lat[a][q]);
            }
            for (int l = 0; l < COMMSCHED_LINK_COUNT; l++)
                if (!(d->hw_lat[l][a][q] >= 0) || isinf(d->hw_lat[l][a][q])) {
                    snprintf(p, sizeof p, "nccl.hw_latency.%s.%s[%d]",
                             link_names[l], algo_names[a], q);
                    return bad(err, p, "a finite number >= 0",
                               d->hw_lat[l][a][q]);
                }
        }
    return COMMSCHED_OK;
}

/* ---- JSON ------------------------------------------------------------- */

/* obj[key] as a number, when present; *seen counts what was found. */
static commsched_status opt_number(const json_t *obj, const char *path,
                                   const char *key, double *out, int *seen,
                                   commsched_error *err)
{
    json_t *v = json_object_get(obj, key);
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!v)
        return COMMSCHED_OK;
    if (seen)
        (*seen)++;
    return cs_json_get_number(v, cs_json_join(p, sizeof p, path, key), out, err);
}

static commsched_status opt_count(const json_t *obj, const char *path,
                                  const char *key, uint32_t *out, int *seen,
                                  commsched_error *err)
{
    json_t *v = json_object_get(obj, key);
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!v)
        return COMMSCHED_OK;
    if (seen)
        (*seen)++;
    cs_json_join(p, sizeof p, path, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > 1000000)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, p,
                                   "expected an integer between 1 and "
                                   "1000000");
    *out = (uint32_t)json_integer_value(v);
    return COMMSCHED_OK;
}

/* An array of exactly n numbers. */
static commsched_status get_numbers(const json_t *v, const char *path,
                                    double *out, size_t n,
                                    commsched_error *err)
{
    /* room for the longest path plus "[index]" (the error struct cuts it) */
    char p[COMMSCHED_ERROR_PATH_LENGTH + 24];
    if (!json_is_array(v) || json_array_size(v) != n)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, path,
                                   "expected an array of %zu numbers", n);
    for (size_t i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        commsched_status st = cs_json_get_number(json_array_get(v, i), p, &out[i], err);
        if (st != COMMSCHED_OK)
            return st;
    }
    return COMMSCHED_OK;
}

/* {"tree": [LL, LL128, Simple], "ring": [...]}; either may be absent. */
static commsched_status get_algo_table(const json_t *v, const char *path,
                                       double t[COMMSCHED_ALGO_COUNT]
                                               [COMMSCHED_PROTO_COUNT],
                                       commsched_error *err)
{
    static const char *const keys[] = {"tree", "ring", NULL};
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_object(v))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, path,
                                   "expected an object, got %s", cs_json_type_name(v));
    commsched_status st = cs_json_check_keys(v, path, keys, err);
    for (int a = 0; st == COMMSCHED_OK && a < COMMSCHED_ALGO_COUNT; a++) {
        json_t *row = json_object_get(v, algo_names[a]);
        if (row)
            st = get_numbers(row, cs_json_join(p, sizeof p, path, algo_names[a]), t[a],
                             COMMSCHED_PROTO_COUNT, err);
    }
    return st;
}

static commsched_status load_nccl(const json_t *v, commsched_device *d,
                                  int *required, commsched_error *err)
{
    static const char *const keys[] = {
        "channels", "bus_bw_intra", "bus_bw_inter", "ll128_max_bw_per_channel",
        "tree_max_bw_per_channel", "net_overhead", "base_latency",
        "hw_latency", NULL};
    static const char *const link_keys[] = {"nvlink", "pci", "net", NULL};
    const char *path = "nccl";
    char p[COMMSCHED_ERROR_PATH_LENGTH];
    if (!json_is_object(v))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, path,
                                   "expected an object, got %s", cs_json_type_name(v));
    commsched_status st = cs_json_check_keys(v, path, keys, err);
    if (st == COMMSCHED_OK)
        st = opt_count(v, path, "channels", &d->channels, required, err);
    if (st == COMMSCHED_OK)
        st = opt_number(v, path, "bus_bw_intra", &d->bus_bw_intra, required,
                        err);
    if (st == COMMSCHED_OK)
        st = opt_number(v, path, "bus_bw_inter", &d->bus_bw_inter, required,
                        err);
    if (st == COMMSCHED_OK)
        st = opt_number(v, path, "ll128_max_bw_per_channel",
                        &d->ll128_max_bw_per_channel, required, err);
    if (st == COMMSCHED_OK)
        st = opt_number(v, path, "tree_max_bw_per_channel",
                        &d->tree_max_bw_per_channel, required, err);
    if (st == COMMSCHED_OK)
        st = opt_number(v, path, "net_overhead", &d->net_overhead, NULL, err);
    json_t *bl = json_object_get(v, "base_latency");
    if (st == COMMSCHED_OK && bl)
        st = get_algo_table(bl, "nccl.base_latency", d->base_lat, err);
    json_t *hw = json_object_get(v, "hw_latency");
    if (st == COMMSCHED_OK && hw) {
        if (!json_is_object(hw))
            return commsched_error_set(err, COMMSCHED_ESCHEMA,
                                       "nccl.hw_latency",
                                       "expected an object, got %s",
                                       cs_json_type_name(hw));
        st = cs_json_check_keys(hw, "nccl.hw_latency", link_keys, err);
        for (int l = 0; st == COMMSCHED_OK && l < COMMSCHED_LINK_COUNT; l++) {
            json_t *t = json_object_get(hw, link_names[l]);
            if (t)
                st = get_algo_table(t,
                                    cs_json_join(p, sizeof p, "nccl.hw_latency",
                                         link_names[l]),
                                    d->hw_lat[l], err);
        }
    }
    return st;
}

/* The fields a profile without "base" must give itself: the device facts.
 * NCCL's latency tables and Inductor's knobs default to their constants. */
#define REQUIRED_TOP 5  /* name, peak_flops, mem_bw, gpus_per_host, ll_max_bw */
#define REQUIRED_NCCL 5 /* channels, two bus bandwidths, two per-channel caps */

static commsched_status from_json(const json_t *root, commsched_device *out,
                                  commsched_error *err)
{
    static const char *const keys[] = {
        "format", "version", "name", "base", "peak_flops", "mem_bw",
        "gpus_per_host", "intra_link", "ll_max_bw", "inductor", "nccl",
        /* a calibrated profile's tables (commsched_costs_load_file) */
        "measured", NULL};
    static const char *const inductor_keys[] = {"intra_node_bw",
                                                "inter_node_bw", NULL};
    commsched_device d = builtins[0];
    int top = 0, nccl = 0;
    if (!json_is_object(root))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, NULL,
                                   "expected a JSON object, got %s",
                                   cs_json_type_name(root));
    commsched_status st = cs_json_check_keys(root, "", keys, err);
    if (st != COMMSCHED_OK)
        return st;
    json_t *v = json_object_get(root, "format");
    if (v && (!json_is_string(v) ||
              strcmp(json_string_value(v), DEVICE_FORMAT) != 0))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, "format",
                                   "expected \"" DEVICE_FORMAT "\"");
    v = json_object_get(root, "version");
    if (v && (!json_is_integer(v) || json_integer_value(v) != DEVICE_VERSION))
        return commsched_error_set(err, COMMSCHED_ESCHEMA, "version",
                                   "expected %d", DEVICE_VERSION);
    v = json_object_get(root, "base");
    int has_base = v != NULL;
    if (v) {
        const commsched_device *b =
            json_is_string(v) ? commsched_device_builtin(json_string_value(v))
                              : NULL;
        if (!b)
            return commsched_error_set(err, COMMSCHED_ESCHEMA, "base",
                                       "expected a built-in profile name "
                                       "(h100, a100, b200)");
        d = *b;
    }
    v = json_object_get(root, "name");
    if (v) {
        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) >= sizeof d.name)
            return commsched_error_set(err, COMMSCHED_ESCHEMA, "name",
                                       "expected a non-empty string of at "
                                       "most %zu bytes",
                                       sizeof d.name - 1);
        snprintf(d.name, sizeof d.name, "%s", json_string_value(v));
        top++;
    }
    if ((st = opt_number(root, "", "peak_flops", &d.peak_flops, &top, err)) ||
        (st = opt_number(root, "", "mem_bw", &d.mem_bw, &top, err)) ||
        (st = opt_count(root, "", "gpus_per_host", &d.gpus_per_host, &top,
                        err)))
        return st;
    v = json_object_get(root, "intra_link");
    if (v) {
        if (json_is_string(v) && strcmp(json_string_value(v), "nvlink") == 0)
            d.intra_link = COMMSCHED_LINK_NVLINK;
        else if (json_is_string(v) && strcmp(json_string_value(v), "pci") == 0)
            d.intra_link = COMMSCHED_LINK_PCI;
        else
            return commsched_error_set(err, COMMSCHED_ESCHEMA, "intra_link",
                                       "expected \"nvlink\" or \"pci\"");
    }
    v = json_object_get(root, "ll_max_bw");
    if (v) {
        if ((st = get_numbers(v, "ll_max_bw", d.ll_max_bw, 3, err)))
            return st;
        top++;
    }
    v = json_object_get(root, "inductor");
    if (v) {
        if (!json_is_object(v))
            return commsched_error_set(err, COMMSCHED_ESCHEMA, "inductor",
                                       "expected an object, got %s",
                                       cs_json_type_name(v));
        if ((st = cs_json_check_keys(v, "inductor", inductor_keys, err)) ||
            (st = opt_number(v, "inductor", "intra_node_bw",
                             &d.inductor_intra_bw, NULL, err)) ||
            (st = opt_number(v, "inductor", "inter_node_bw",
                             &d.inductor_inter_bw, NULL, err)))
            return st;
    }
    v = json_object_get(root, "nccl");
    if (v && (st = load_nccl(v, &d, &nccl, err)))
        return st;
    if (!has_base && (top < REQUIRED_TOP || nccl < REQUIRED_NCCL)) {
        static const char *const need[] = {
            "name", "peak_flops", "mem_bw", "gpus_per_host", "ll_max_bw"};
        static const char *const need_nccl[] = {
            "channels", "bus_bw_intra", "bus_bw_inter",
            "ll128_max_bw_per_channel", "tree_max_bw_per_channel"};
        char p[COMMSCHED_ERROR_PATH_LENGTH];
        for (size_t i = 0; i < REQUIRED_TOP; i++)
            if (!json_object_get(root, need[i]))
                return commsched_error_set(err, COMMSCHED_ESCHEMA, need[i],
                                           "missing required field (or give "
                                           "\"base\": a built-in to start "
                                           "from)");
        json_t *n = json_object_get(root, "nccl");
        for (size_t i = 0; i < REQUIRED_NCCL; i++)
            if (!n || !json_object_get(n, need_nccl[i]))
                return commsched_error_set(err, COMMSCHED_ESCHEMA,
                                           cs_json_join(p, sizeof p, "nccl",
                                                need_nccl[i]),
                                           "missing required field (or give "
                                           "\"base\": a built-in to start "
                                           "from)");
    }
    if (has_base && !json_object_get(root, "name")) {
        char base_name[sizeof d.name];
        memcpy(base_name, d.name, sizeof base_name);
        snprintf(d.name, sizeof d.name, "%.50s+file", base_name);
    }
    /* Range errors are bad input too; keep the loader's status family. */
    commsched_error tmp = {0};
    if (commsched_device_check(&d, &tmp) != COMMSCHED_OK)
        return commsched_error_set(err, COMMSCHED_ESCHEMA, tmp.path, "%s",
                                   tmp.text);
    *out = d;
    return COMMSCHED_OK;
}

commsched_status commsched_device_load_string(const char *text,
                                              commsched_device *out,
                                              commsched_error *err)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return cs_json_syntax_error(&je, err);
    commsched_status st = from_json(root, out, err);
    json_decref(root);
    return st;
}

commsched_status commsched_device_load_file(const char *path,
                                            commsched_device *out,
                                            commsched_error *err)
{
    json_t *root;
    commsched_status st = cs_json_load_file(path, &root, err);
    if (st != COMMSCHED_OK)
        return st;
    st = from_json(root, out, err);
    json_decref(root);
    return st;
}

commsched_status commsched_device_lookup(const char *name_or_path,
                                         commsched_device *out,
                                         commsched_error *err)
{
    const commsched_device *b = commsched_device_builtin(name_or_path);
    if (b) {
        *out = *b;
        return COMMSCHED_OK;
    }
    /* Anything that looks like a file name is read as one; a bare word
     * that is no built-in is a typo, and the message should say so. */
    if (strchr(name_or_path, '/') || strchr(name_or_path, '.'))
        return commsched_device_load_file(name_or_path, out, err);
    return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                               "unknown device \"%s\": expected h100, a100, "
                               "b200 or a profile file (*.json)",
                               name_or_path);
}

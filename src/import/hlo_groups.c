/* Reading the values of HLO attributes: numbers and lists, and the
 * device groups of collectives (hlo.h, hlo_group). XLA writes replica
 * groups three ways -- a list {{0,1},{2,3}}, an iota [2,2]<=[4] (with a
 * transposition T(1,0)), a mesh mesh['a'=2,'b'=2] {'a'} -- and what the
 * ids mean depends on channel_id and use_global_device_ids (XLA's
 * CollectiveOpGroupMode: replica ids, partition ids, replicas across all
 * partitions, or global device ids). Each is expanded into global device
 * ids (replica x partitions + partition), so one set of devices has one
 * name however it was written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

/* Replica groups are expanded into device ids up to this many devices;
 * beyond it the group is named by the attribute's text. */
#define ENUM_DEVICES 65536
/* Longest group name made from the device ids; longer sets are named by
 * their shape and a hash of the ids. */
#define GROUP_NAME_MAX 160

static commsched_status oom(commsched_error *err)
{
    return commsched_error_set(err, COMMSCHED_ENOMEM, NULL, "out of memory");
}

void hlo_rd_blank(hlo_rd *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
        r->p++;
}

int hlo_rd_char(hlo_rd *r, char ch)
{
    hlo_rd_blank(r);
    if (r->p < r->end && *r->p == ch) {
        r->p++;
        return 1;
    }
    return 0;
}

/* A non-negative integer below 2^53; -1 when there is none. */
int64_t hlo_rd_int(hlo_rd *r)
{
    hlo_rd_blank(r);
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return -1;
    int64_t v = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (v > COMMSCHED_MAX_SIZE)
            return -1;
        v = v * 10 + (*r->p++ - '0');
    }
    return v <= COMMSCHED_MAX_SIZE ? v : -1;
}

/* Replica groups as read: g groups of s ids each, ids[g*s]. */
typedef struct groups {
    int64_t *ids;
    int64_t g, s;
    int empty; /* "{}": every device of the mode's range */
} groups;

static commsched_status bad_groups(commsched_error *err, hlo_span at, const char *why)
{
    return hlo_fail(err, COMMSCHED_EPARSE, at, "replica_groups: %s", why);
}

/* The iota tile assignment [d...]<=[r...]T(p...): iota over prod(r)
 * reshaped to r, transposed by p, read in row-major order (its reshape
 * to d changes no order). n: the element count, out: ids. */
static commsched_status iota_ids(commsched_error *err, hlo_span at, hlo_rd *r, int64_t n,
                                 int64_t **out)
{
    int64_t rs[64], perm[64];
    long nr = 0, np = 0;
    if (!hlo_rd_char(r, '['))
        return bad_groups(err, at, "expected [dims]<=[dims]");
    do {
        int64_t v = hlo_rd_int(r);
        if (v < 1 || nr == 64)
            return bad_groups(err, at, "expected a positive dimension");
        rs[nr++] = v;
    } while (hlo_rd_char(r, ','));
    if (!hlo_rd_char(r, ']'))
        return bad_groups(err, at, "expected ']'");
    double prod = 1;
    for (long i = 0; i < nr; i++)
        prod *= (double)rs[i];
    if (prod != (double)n)
        return bad_groups(err, at, "the iota's dimensions do not hold the "
                                 "groups' devices");
    if (hlo_rd_char(r, 'T')) {
        if (!hlo_rd_char(r, '('))
            return bad_groups(err, at, "expected T(permutation)");
        do {
            int64_t v = hlo_rd_int(r);
            if (v < 0 || np == 64)
                return bad_groups(err, at, "expected a dimension");
            perm[np++] = v;
        } while (hlo_rd_char(r, ','));
        if (!hlo_rd_char(r, ')'))
            return bad_groups(err, at, "expected ')'");
        if (np != nr)
            return bad_groups(err, at, "the transposition does not match the "
                                     "dimensions");
        unsigned char seen[64] = {0};
        for (long i = 0; i < np; i++) {
            if (perm[i] >= nr || seen[perm[i]])
                return bad_groups(err, at, "T(...) is not a permutation");
            seen[perm[i]] = 1;
        }
    } else {
        for (long i = 0; i < nr; i++)
            perm[i] = i;
        np = nr;
    }
    if (n > ENUM_DEVICES) {
        *out = NULL;
        return COMMSCHED_OK;
    }
    int64_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids)
        return oom(err);
    /* strides of r (row-major), taken in the transposed order */
    int64_t stride[64], tdim[64], idx[64] = {0};
    int64_t acc = 1;
    for (long i = nr - 1; i >= 0; i--) {
        stride[i] = acc;
        acc *= rs[i];
    }
    for (long i = 0; i < np; i++)
        tdim[i] = rs[perm[i]];
    for (int64_t e = 0; e < n; e++) {
        int64_t v = 0;
        for (long i = 0; i < np; i++)
            v += idx[i] * stride[perm[i]];
        ids[e] = v;
        for (long i = np - 1; i >= 0; i--) {
            if (++idx[i] < tdim[i])
                break;
            idx[i] = 0;
        }
    }
    *out = ids;
    return COMMSCHED_OK;
}

/* An axis name of the mesh form: 'name' or name. */
static int rd_axis(hlo_rd *r, const char **s, size_t *len)
{
    hlo_rd_blank(r);
    char q = r->p < r->end && (*r->p == '\'' || *r->p == '"') ? *r->p : 0;
    if (q)
        r->p++;
    *s = r->p;
    while (r->p < r->end && (q ? *r->p != q
                               : (*r->p != '=' && *r->p != ',' &&
                                  *r->p != '}' && *r->p != ']' &&
                                  *r->p != ':' && *r->p != ' ')))
        r->p++;
    *len = (size_t)(r->p - *s);
    if (q) {
        if (r->p >= r->end)
            return 0;
        r->p++;
    }
    return *len > 0;
}

/* mesh['a'=4,'b'=2] {'a'} (optionally ", device_ids=(...)" after the
 * axes, sub-axes 'a':(pre)size): the groups vary over the listed axes
 * (the last one fastest) and hold the other coordinates fixed. */
static commsched_status mesh_groups(commsched_error *err, hlo_span at, hlo_rd *r, groups *gr)
{
    const char *an[64];
    size_t al[64];
    int64_t as[64];
    long na = 0;
    if (!hlo_rd_char(r, '['))
        return bad_groups(err, at, "expected mesh[axis=size, ...]");
    double total = 1;
    do {
        if (na == 64 || !rd_axis(r, &an[na], &al[na]) || !hlo_rd_char(r, '='))
            return bad_groups(err, at, "expected 'axis'=size");
        as[na] = hlo_rd_int(r);
        if (as[na] < 1)
            return bad_groups(err, at, "a mesh axis has a positive size");
        total *= (double)as[na];
        na++;
    } while (hlo_rd_char(r, ','));
    if (!hlo_rd_char(r, ']'))
        return bad_groups(err, at, "expected ']' closing the mesh");
    if (total > COMMSCHED_MAX_GROUP_SIZE)
        return bad_groups(err, at, "a mesh of more than 2^24 devices");
    int64_t n = (int64_t)total;
    int64_t *dev = NULL;
    commsched_status st = COMMSCHED_OK;
    if (hlo_rd_char(r, ',')) { /* device_ids=(iota or list) */
        hlo_rd_blank(r);
        static const char key[] = "device_ids=(";
        if ((size_t)(r->end - r->p) < sizeof key - 1 ||
            memcmp(r->p, key, sizeof key - 1) != 0)
            return bad_groups(err, at, "expected device_ids=(...)");
        r->p += sizeof key - 1;
        hlo_rd_blank(r);
        if (r->p < r->end && *r->p == '[') {
            while (r->p < r->end && *r->p != '<') /* [dims] of the mesh */
                r->p++;
            if (!hlo_rd_char(r, '<') || !hlo_rd_char(r, '='))
                return bad_groups(err, at, "expected [dims]<=[dims]");
            if ((st = iota_ids(err, at, r, n, &dev)) != COMMSCHED_OK)
                return st;
        } else {
            if (n <= ENUM_DEVICES &&
                !(dev = malloc((size_t)n * sizeof *dev)))
                return oom(err);
            int64_t k = 0;
            do {
                int64_t v = hlo_rd_int(r);
                if (v < 0 || v >= n || k >= n) {
                    free(dev);
                    return bad_groups(err, at, "device_ids: expected the "
                                             "mesh's device ids");
                }
                if (dev)
                    dev[k] = v;
                k++;
            } while (hlo_rd_char(r, ','));
            if (k != n) {
                free(dev);
                return bad_groups(err, at, "device_ids: one id per device "
                                         "of the mesh");
            }
        }
        if (!hlo_rd_char(r, ')')) {
            free(dev);
            return bad_groups(err, at, "expected ')' closing device_ids");
        }
    }
    /* the grouped axes: index, pre, size (pre 0: the whole axis) */
    long ref_axis[64];
    int64_t ref_pre[64], ref_size[64];
    long nref = 0;
    int64_t gsize = 1;
    if (!hlo_rd_char(r, '{')) {
        free(dev);
        return bad_groups(err, at, "expected {axes} after the mesh");
    }
    if (!hlo_rd_char(r, '}')) {
        do {
            const char *s;
            size_t l;
            long a = 0;
            if (nref == 64 || !rd_axis(r, &s, &l))
                break;
            while (a < na && !(al[a] == l && memcmp(an[a], s, l) == 0))
                a++;
            if (a == na) {
                free(dev);
                return hlo_fail(err, COMMSCHED_EPARSE, at,
                                "replica_groups: axis '%.*s' is not one of "
                                "the mesh's",
                                (int)l, s);
            }
            ref_axis[nref] = a;
            ref_pre[nref] = 0;
            ref_size[nref] = as[a];
            if (hlo_rd_char(r, ':')) {
                int64_t pre, size;
                if (!hlo_rd_char(r, '(') || (pre = hlo_rd_int(r)) < 1 ||
                    !hlo_rd_char(r, ')') || (size = hlo_rd_int(r)) < 2 ||
                    as[a] % (pre * size) != 0) {
                    free(dev);
                    return bad_groups(err, at, "a sub-axis is 'axis':(pre)size "
                                             "dividing the axis");
                }
                ref_pre[nref] = pre;
                ref_size[nref] = size;
            }
            gsize *= ref_size[nref];
            nref++;
        } while (hlo_rd_char(r, ','));
        if (!hlo_rd_char(r, '}')) {
            free(dev);
            return bad_groups(err, at, "expected '}' closing the axes");
        }
    }
    if (gsize > n || n % gsize != 0) {
        free(dev);
        return bad_groups(err, at, "the axes overlap");
    }
    gr->g = n / gsize;
    gr->s = gsize;
    if (n > ENUM_DEVICES)
        return COMMSCHED_OK;
    gr->ids = malloc((size_t)n * sizeof *gr->ids);
    int64_t *fill = calloc((size_t)gr->g, sizeof *fill);
    if (!gr->ids || !fill) {
        free(fill);
        free(dev);
        return oom(err);
    }
    /* each device's group: its coordinates with the grouped digits
     * removed, ranked; its place in the group: the grouped digits */
    int64_t *key = malloc((size_t)n * sizeof *key);
    int64_t *rank = malloc((size_t)n * sizeof *rank);
    if (!key || !rank) {
        free(key);
        free(rank);
        free(fill);
        free(dev);
        return oom(err);
    }
    for (int64_t d = 0; d < n; d++) {
        int64_t coord[64], rem = d;
        for (long a = na - 1; a >= 0; a--) {
            coord[a] = rem % as[a];
            rem /= as[a];
        }
        int64_t rk = 0;
        for (long j = 0; j < nref; j++) {
            long a = ref_axis[j];
            int64_t rest = ref_pre[j] ? as[a] / (ref_pre[j] * ref_size[j]) : 1;
            int64_t digit = ref_pre[j] ? (coord[a] / rest) % ref_size[j]
                                       : coord[a];
            rk = rk * ref_size[j] + digit;
            coord[a] -= digit * rest; /* grouped digit removed */
        }
        int64_t k = 0;
        for (long a = 0; a < na; a++)
            k = k * as[a] + coord[a];
        key[d] = k;
        rank[d] = rk;
    }
    /* keys are sparse: number them in increasing order, from 1 */
    int64_t *slot = malloc((size_t)n * sizeof *slot);
    if (!slot) {
        free(key);
        free(rank);
        free(fill);
        free(dev);
        return oom(err);
    }
    for (int64_t d = 0; d < n; d++)
        slot[d] = -1;
    for (int64_t d = 0; d < n; d++) /* keys lie in [0, n) */
        slot[key[d]] = 0;
    int64_t next = 0;
    for (int64_t k = 0; k < n; k++)
        if (slot[k] == 0)
            slot[k] = ++next;
    for (int64_t d = 0; d < n; d++) {
        int64_t gi = slot[key[d]] - 1;
        if (gi < 0 || gi >= gr->g || rank[d] >= gsize ||
            fill[gi] >= gsize) {
            st = bad_groups(err, at, "the axes do not split the mesh");
            break;
        }
        gr->ids[gi * gsize + rank[d]] = dev ? dev[d] : d;
        fill[gi]++;
    }
    free(slot);
    free(key);
    free(rank);
    free(fill);
    free(dev);
    return st;
}

/* Reads a replica_groups value in any of its three notations. */
static commsched_status read_groups(commsched_error *err, const hlo_attr *a, groups *gr)
{
    hlo_rd r = {a->val.p, a->val.p + a->val.len};
    commsched_status st;
    memset(gr, 0, sizeof *gr);
    hlo_rd_blank(&r);
    if (r.p < r.end && *r.p == '{') { /* {{0,1},{2,3}} */
        r.p++;
        if (hlo_rd_char(&r, '}')) {
            gr->empty = 1;
            goto end;
        }
        size_t cap = 64, n = 0;
        gr->ids = malloc(cap * sizeof *gr->ids);
        if (!gr->ids)
            return oom(err);
        do {
            if (!hlo_rd_char(&r, '{'))
                return bad_groups(err, a->val, "expected {ids}");
            int64_t s = 0;
            if (!hlo_rd_char(&r, '}')) {
                do {
                    int64_t v = hlo_rd_int(&r);
                    if (v < 0 || v >= COMMSCHED_MAX_GROUP_SIZE)
                        return bad_groups(err, a->val, "expected a device id "
                                                     "below 2^24");
                    if (n == cap) {
                        int64_t *q = realloc(gr->ids, 2 * cap * sizeof *q);
                        if (!q)
                            return oom(err);
                        gr->ids = q;
                        cap *= 2;
                    }
                    gr->ids[n++] = v;
                    s++;
                } while (hlo_rd_char(&r, ','));
                if (!hlo_rd_char(&r, '}'))
                    return bad_groups(err, a->val, "expected '}'");
            }
            if (gr->g > 0 && s != gr->s)
                return hlo_fail(err, COMMSCHED_EPARSE, a->val,
                                "replica_groups: groups of %lld and %lld "
                                "devices (one rank's graph has one group "
                                "size)",
                                (long long)gr->s, (long long)s);
            gr->s = s;
            gr->g++;
        } while (hlo_rd_char(&r, ','));
        if (!hlo_rd_char(&r, '}'))
            return bad_groups(err, a->val, "expected '}' closing the groups");
        if (gr->s == 0)
            return bad_groups(err, a->val, "an empty group");
    } else if (r.p < r.end && *r.p == '[') { /* [g,s]<=[dims]T(perm) */
        r.p++;
        gr->g = hlo_rd_int(&r);
        if (!hlo_rd_char(&r, ',') || (gr->s = hlo_rd_int(&r)) < 1 || gr->g < 1 ||
            !hlo_rd_char(&r, ']') || !hlo_rd_char(&r, '<') || !hlo_rd_char(&r, '='))
            return bad_groups(err, a->val, "expected [groups,size]<=[dims]");
        if ((double)gr->g * (double)gr->s > COMMSCHED_MAX_GROUP_SIZE)
            return bad_groups(err, a->val, "more than 2^24 devices");
        if ((st = iota_ids(err, a->val, &r, gr->g * gr->s, &gr->ids)) !=
            COMMSCHED_OK)
            return st;
    } else if ((size_t)(r.end - r.p) >= 4 && memcmp(r.p, "mesh", 4) == 0) {
        r.p += 4;
        if ((st = mesh_groups(err, a->val, &r, gr)) != COMMSCHED_OK)
            return st;
    } else {
        return bad_groups(err, a->val, "expected {{ids},...}, [groups,size]"
                                     "<=[dims] or mesh[...] {axes}");
    }
end:
    hlo_rd_blank(&r);
    if (r.p != r.end)
        return bad_groups(err, a->val, "unexpected text after the groups");
    return COMMSCHED_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Rows of ids, compared by their first (qsort's element is a row). */
static int cmp_row(const void *a, const void *b) { return cmp_i64(a, b); }

/* "{{0,1},{2,3}}": g rows of s ids, the rows sorted by their first id
 * (and each row sorted first when `within`: a replica group's order is
 * its ranks', not which devices it holds), into buf; a long one is named
 * by its shape and an FNV-1a hash of its ids. Returns the length. */
static size_t set_name(int64_t *ids, int64_t g, int64_t s, int within,
                       char *buf, size_t size)
{
    if (within)
        for (int64_t i = 0; i < g; i++)
            qsort(ids + i * s, (size_t)s, sizeof *ids, cmp_i64);
    qsort(ids, (size_t)g, (size_t)s * sizeof *ids, cmp_row);
    size_t n = 0;
    buf[n++] = '{';
    for (int64_t i = 0; i < g && n < GROUP_NAME_MAX; i++) {
        for (int64_t j = 0; j < s && n < GROUP_NAME_MAX; j++)
            n += (size_t)snprintf(buf + n, size - n, "%s%lld",
                                  j ? "," : (i ? ",{" : "{"),
                                  (long long)ids[i * s + j]);
        buf[n++] = '}';
    }
    if (n < GROUP_NAME_MAX) {
        buf[n++] = '}';
        buf[n] = '\0';
        return n;
    }
    uint64_t h = UINT64_C(14695981039346656037);
    for (int64_t i = 0; i < g * s; i++) {
        h ^= (uint64_t)ids[i];
        h *= UINT64_C(1099511628211);
    }
    return (size_t)snprintf(buf, size, "%lld groups of %lld devices #%016llx",
                            (long long)g, (long long)s,
                            (unsigned long long)h);
}

commsched_status hlo_group(const hlo_module *m, const hlo_instr *in,
                           int permute, int has_global_ids, int64_t *size_out,
                           char *buf, size_t cap, commsched_error *err)
{
    const int64_t R = m->replicas, P = m->partitions;
    int64_t size = 1;
    commsched_status st = COMMSCHED_OK;
    const hlo_attr *pairs = hlo_attr_find(m, in, "source_target_pairs");
    if (cap < HLO_GROUP_NAME_CAP)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "hlo_group: a name buffer of %zu bytes",
                                   cap);
    if (permute) {
        /* a permute: the devices its pairs name; named by the pairs */
        groups gr = {0};
        if (pairs && (st = read_groups(err, pairs, &gr)) != COMMSCHED_OK) {
            free(gr.ids);
            return st;
        }
        if (pairs && !gr.empty && gr.s != 2) {
            free(gr.ids);
            return hlo_fail(err, COMMSCHED_EPARSE, pairs->val,
                            "source_target_pairs: expected {{source,"
                            "target},...}");
        }
        int64_t n = gr.ids ? 2 * gr.g : 0;
        int64_t *d = malloc((size_t)(n ? n : 1) * sizeof *d);
        if (!d) {
            free(gr.ids);
            return oom(err);
        }
        if (n)
            memcpy(d, gr.ids, (size_t)n * sizeof *d);
        qsort(d, (size_t)n, sizeof *d, cmp_i64);
        for (int64_t i = 1; i < n; i++)
            size += d[i] != d[i - 1];
        free(d);
        memcpy(buf, "pairs", 5);
        if (n)
            set_name(gr.ids, gr.g, 2, 0, buf + 5, cap - 5);
        else
            snprintf(buf + 5, cap - 5, "{}");
        free(gr.ids);
    } else {
        const hlo_attr *rg = hlo_attr_find(m, in, "replica_groups");
        groups gr = {0};
        if (!rg)
            gr.empty = 1;
        else if ((st = read_groups(err, rg, &gr)) != COMMSCHED_OK) {
            free(gr.ids);
            return st;
        }
        int chan = hlo_attr_find(m, in, "channel_id") != NULL;
        const hlo_attr *gl = hlo_attr_find(m, in, "use_global_device_ids");
        int global = gl && hlo_span_eq(gl->val, "true");
        /* XLA's CollectiveOpGroupMode */
        enum { CROSS_REPLICA, CROSS_PARTITION, REPLICA_AND_PARTITION,
               FLATTENED } mode;
        if (!chan) {
            if (global) {
                free(gr.ids);
                return hlo_fail(err, COMMSCHED_EPARSE, gl->val,
                                "use_global_device_ids=true needs a "
                                "channel_id");
            }
            mode = CROSS_REPLICA;
        } else if (!has_global_ids) {
            mode = CROSS_PARTITION;
        } else {
            mode = global ? FLATTENED : REPLICA_AND_PARTITION;
        }
        int64_t range = mode == CROSS_REPLICA ? R
                        : mode == CROSS_PARTITION ? P
                        : mode == REPLICA_AND_PARTITION ? R : R * P;
        if (gr.empty) {
            gr.g = 1;
            gr.s = range;
        }
        size = mode == REPLICA_AND_PARTITION ? gr.s * P : gr.s;
        for (int64_t i = 0; gr.ids && i < gr.g * gr.s; i++)
            if (gr.ids[i] >= range) {
                long long bad = (long long)gr.ids[i];
                free(gr.ids);
                return hlo_fail(err, COMMSCHED_EPARSE, rg->val,
                                "replica_groups: device %lld, beyond the "
                                "module's %lld %s",
                                bad, (long long)range,
                                mode == CROSS_REPLICA ||
                                        mode == REPLICA_AND_PARTITION
                                    ? "replicas"
                                    : mode == CROSS_PARTITION
                                          ? "partitions"
                                          : "devices (replicas x "
                                            "partitions)");
            }
        if (gr.g * gr.s > range || size > R * P) {
            free(gr.ids);
            return hlo_fail(err, COMMSCHED_EPARSE,
                            rg ? rg->val : in->opcode,
                            "replica_groups: more devices than the module's "
                            "%lld",
                            (long long)(R * P));
        }
        if (R * P <= ENUM_DEVICES && (gr.ids || gr.empty)) {
            /* the set in global device ids (replica * P + partition) */
            int64_t ng = mode == CROSS_REPLICA ? gr.g * P
                         : mode == CROSS_PARTITION ? gr.g * R : gr.g;
            int64_t *all = malloc((size_t)(ng * size) * sizeof *all);
            if (!all) {
                free(gr.ids);
                return oom(err);
            }
            int64_t k = 0;
            for (int64_t o = 0; o < (mode == CROSS_REPLICA ? P
                                     : mode == CROSS_PARTITION ? R : 1);
                 o++)
                for (int64_t i = 0; i < gr.g; i++)
                    for (int64_t j = 0; j < gr.s; j++) {
                        int64_t id = gr.ids ? gr.ids[i * gr.s + j] : j;
                        if (mode == CROSS_REPLICA)
                            all[k++] = id * P + o;
                        else if (mode == CROSS_PARTITION)
                            all[k++] = o * P + id;
                        else if (mode == REPLICA_AND_PARTITION)
                            for (int64_t p = 0; p < P; p++)
                                all[k++] = id * P + p;
                        else
                            all[k++] = id;
                    }
            set_name(all, ng, size, 1, buf, cap);
            free(all);
        } else {
            /* too many devices to list: the attribute names it */
            snprintf(buf, cap, "%s %.*s",
                             mode == CROSS_REPLICA ? "replicas"
                             : mode == CROSS_PARTITION ? "partitions"
                             : mode == REPLICA_AND_PARTITION
                                 ? "replicas x partitions"
                                 : "devices",
                             rg ? (int)(rg->val.len < GROUP_NAME_MAX
                                            ? rg->val.len
                                            : GROUP_NAME_MAX)
                                : 2,
                             rg ? rg->val.p : "{}");
        }
        free(gr.ids);
    }
    *size_out = size;
    return COMMSCHED_OK;
}

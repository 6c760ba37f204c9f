/* commsched tests — the oracle of test_check_ref.c: --check's host
 * reference as it was before it held segments (src/runtime/check_ref.c
 * until issue 43), a replay of the schedule's data flow over every rank's
 * buffers byte for byte, with a mask of the bytes whose value is known
 * exactly. Simple and slow (ranks x bytes of memory), it is what the
 * segment replay must equal on random graphs. */
#include "check_ref.h"
#include "check_ref_bytes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

typedef struct expect {
    uint32_t buf;       /* root buffer of the result, NONE: private buffer */
    size_t off, len;    /* bytes */
    uint8_t *bytes;     /* what this rank must see */
    uint8_t *known;     /* per byte: compared */
} expect;

struct ob_ref {
    const cs_plan *p;
    int world, rank;
    cs_ref_rs rs;
    uint8_t *ek;        /* per node */
    uint8_t *fill_ek;   /* per buffer: the kind its values are written in */
    uint8_t *touched;   /* per buffer */
    expect *exp;        /* per node */
    uint64_t unknown;
};

/* ---- elements --------------------------------------------------------------- */

static size_t ek_size(cs_ekind k)
{
    switch (k) {
    case CS_EK_F64: case CS_EK_I64: return 8;
    case CS_EK_F32: case CS_EK_I32: return 4;
    case CS_EK_F16: case CS_EK_BF16: case CS_EK_U16: case CS_EK_I16: return 2;
    default: return 1;
    }
}

static int ek_float(cs_ekind k)
{
    return k == CS_EK_F64 || k == CS_EK_F32 || k == CS_EK_F16 ||
           k == CS_EK_BF16;
}

/* Bits of the significand: integers up to 2^bits are exact. */
static double ek_exact_limit(cs_ekind k)
{
    switch (k) {
    case CS_EK_F64: return 9007199254740992.0; /* 2^53 */
    case CS_EK_F32: return 16777216.0;         /* 2^24 */
    case CS_EK_F16: return 2048.0;             /* 2^11 */
    default: return 256.0;                     /* bfloat16: 2^8 */
    }
}

/* An integer element, sign-extended, as the bits of a uint64 (so sums and
 * products wrap modulo 2^64 and then modulo the width). */
static uint64_t rd_int(const uint8_t *p, cs_ekind k)
{
    switch (k) {
    case CS_EK_I64: { int64_t v; memcpy(&v, p, 8); return (uint64_t)v; }
    case CS_EK_I32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    case CS_EK_I16: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case CS_EK_I8: { int8_t v; memcpy(&v, p, 1); return (uint64_t)(int64_t)v; }
    case CS_EK_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    default: return *p; /* U8 */
    }
}

static void wr_int(uint8_t *p, cs_ekind k, uint64_t v)
{
    size_t es = ek_size(k);
    uint8_t tmp[8];
    /* Little- or big-endian alike: store through the type of that width. */
    switch (es) {
    case 8: { uint64_t w = v; memcpy(tmp, &w, 8); break; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(tmp, &w, 4); break; }
    case 2: { uint16_t w = (uint16_t)v; memcpy(tmp, &w, 2); break; }
    default: tmp[0] = (uint8_t)v; break;
    }
    memcpy(p, tmp, es);
}

static int int_less(uint64_t a, uint64_t b, cs_ekind k)
{
    if (k == CS_EK_U16 || k == CS_EK_U8)
        return a < b;
    return (int64_t)a < (int64_t)b;
}

static int int_fits(int64_t v, cs_ekind k)
{
    switch (k) {
    case CS_EK_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case CS_EK_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case CS_EK_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case CS_EK_U16: return v >= 0 && v <= UINT16_MAX;
    case CS_EK_U8: return v >= 0 && v <= UINT8_MAX;
    default: return 1; /* int64: the builtins saw any overflow */
    }
}

/* One element of a reduction over k operands; returns whether the result
 * is known exactly. */
static int reduce_elem(cs_ekind ek, cs_rkind rk, const uint8_t *const *op,
                       int k, uint8_t *out)
{
    size_t es = ek_size(ek);
    if (!ek_float(ek)) {
        uint64_t acc = rd_int(op[0], ek);
        if (rk == CS_RK_MIN || rk == CS_RK_MAX) {
            for (int j = 1; j < k; j++) {
                uint64_t v = rd_int(op[j], ek);
                if (rk == CS_RK_MIN ? int_less(v, acc, ek) : int_less(acc, v, ek))
                    acc = v;
            }
            wr_int(out, ek, acc);
            return 1;
        }
        /* A sum or product beyond the type's range has no one answer:
         * Open MPI's AVX operations saturate unsigned sums where the
         * plain ones wrap. */
        int64_t exact = (int64_t)acc;
        for (int j = 1; j < k; j++) {
            int64_t v = (int64_t)rd_int(op[j], ek);
            if (rk == CS_RK_PROD ? __builtin_mul_overflow(exact, v, &exact)
                                 : __builtin_add_overflow(exact, v, &exact))
                return 0;
        }
        if (!int_fits(exact, ek))
            return 0;
        wr_int(out, ek, (uint64_t)exact);
        return 1;
    }
    double v[64 + 1], lim = ek_exact_limit(ek);
    if (k > 64)
        return 0;
    for (int j = 0; j < k; j++) {
        v[j] = cs_elem_get(op[j], 0, ek);
        if (!isfinite(v[j]))
            return 0;
    }
    if (rk == CS_RK_MIN || rk == CS_RK_MAX) {
        int w = 0;
        for (int j = 1; j < k; j++)
            if (rk == CS_RK_MIN ? v[j] < v[w] : v[j] > v[w])
                w = j;
        /* A tie between different encodings (+0 and -0) has no one answer. */
        for (int j = 0; j < k; j++)
            if (v[j] == v[w] && memcmp(op[j], op[w], es) != 0)
                return 0;
        memcpy(out, op[w], es);
        return 1;
    }
    /* Sum and product: exact when every partial result is an integer the
     * type holds, whatever the order; zero results need a sign, so they
     * count only when no operand is negative. */
    double acc = rk == CS_RK_PROD ? 1 : 0, bound = rk == CS_RK_PROD ? 1 : 0;
    int neg = 0, zero = 0;
    for (int j = 0; j < k; j++) {
        if (v[j] != floor(v[j]))
            return 0;
        neg |= signbit(v[j]) != 0;
        zero |= v[j] == 0;
        if (rk == CS_RK_PROD) {
            acc *= v[j];
            bound *= fmax(fabs(v[j]), 1);
        } else {
            acc += v[j];
            bound += fabs(v[j]);
        }
    }
    if (bound > lim || ((zero || acc == 0) && neg))
        return 0;
    cs_elem_put(out, 0, ek, (int64_t)acc);
    return 1;
}

/* ---- values ------------------------------------------------------------------- */

/* Buffer `id` on rank R: small positive integers, different per rank, so
 * a piece from the wrong rank or the wrong place shows. */
static void fill_image(uint8_t *dst, size_t bytes, cs_ekind ek, uint32_t id,
                       int R)
{
    size_t es = ek_size(ek), n = bytes / es;
    for (size_t i = 0; i < n; i++)
        cs_elem_put(dst, i, ek, 1 + (int64_t)((i + 2u * (size_t)R + 5u * id) % 7u));
    memset(dst + n * es, 0x5a, bytes - n * es);
}

/* ---- the replay ---------------------------------------------------------------- */

typedef struct pend {
    uint32_t v;
    uint32_t rbuf, wbuf;  /* roots it reads / writes (NONE: none) */
    int racing;           /* in flight beside a collective that writes what
                             it reads or writes, or reads what it writes */
    int done;
    size_t *off, *len;    /* per rank */
    uint8_t **data, **known;
} pend;

typedef struct replay {
    ob_ref *r;
    const commsched_graph *g;
    int W;
    uint8_t **mem, **kn;  /* [rank * n_buffers + b] */
    pend *pend;
    uint32_t n_pend;
} replay;

static int rep_fill(replay *x, uint32_t b)
{
    const cs_plan *p = x->r->p;
    if (b == COMMSCHED_NONE || !x->r->touched[b] || p->bytes[b] <= 0)
        return 0;
    size_t bytes = (size_t)p->bytes[b];
    for (int R = 0; R < x->W; R++) {
        size_t at = (size_t)R * x->g->n_buffers + b;
        if (!x->mem[at]) {
            x->mem[at] = malloc(bytes);
            x->kn[at] = malloc(bytes);
            if (!x->mem[at] || !x->kn[at])
                return -1;
        }
        fill_image(x->mem[at], bytes, (cs_ekind)x->r->fill_ek[b], b, R);
        memset(x->kn[at], 1, bytes);
    }
    return 0;
}

/* A byte range of buffer b on rank R, or NULL when the buffer is absent
 * or too small (then nothing about it is known). */
static const uint8_t *rep_at(replay *x, int R, uint32_t b, size_t off,
                             size_t len, const uint8_t **known)
{
    if (b == COMMSCHED_NONE || (size_t)x->r->p->bytes[b] < off + len)
        return NULL;
    size_t at = (size_t)R * x->g->n_buffers + b;
    if (!x->mem[at])
        return NULL;
    *known = x->kn[at] + off;
    return x->mem[at] + off;
}

static int all_known(const uint8_t *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!k[i])
            return 0;
    return 1;
}

/* Collective v as every rank runs it: its results, pending until it
 * completes. */
static int rep_issue(replay *x, uint32_t v)
{
    const cs_plan *p = x->r->p;
    const commsched_graph *g = x->g;
    const cs_node *nd = &g->nodes[v];
    commsched_coll_op op = (commsched_coll_op)nd->coll_op;
    cs_ekind ek = (cs_ekind)x->r->ek[v];
    cs_rkind rk = cs_check_rkind((commsched_reduce_op)nd->reduce_op);
    int k = (int)g->groups[nd->group].size;
    cs_coll_shape sh;
    cs_plan_coll_shape(p, v, (size_t)k, &sh);
    size_t n = sh.count, es = ek_size(ek), nb = n * es;
    uint32_t sb = p->coll[v].in, rb = p->coll[v].out;
    int ip = sh.in_place;
    uint32_t src = ip ? rb : sb;
    pend *pd = &x->pend[x->n_pend++];
    memset(pd, 0, sizeof *pd);
    pd->v = v;
    pd->rbuf = op == COMMSCHED_COLL_RECV || op == COMMSCHED_COLL_BARRIER
                   ? COMMSCHED_NONE : src;
    pd->wbuf = op == COMMSCHED_COLL_SEND || op == COMMSCHED_COLL_BARRIER
                   ? COMMSCHED_NONE : rb;
    if (es != p->coll[v].elem)
        pd->racing = 1; /* the adaptor moves another width: not ours */
    /* Races with what is still in flight. */
    for (uint32_t i = 0; i < x->n_pend - 1; i++) {
        pend *u = &x->pend[i];
        if (u->done)
            continue;
        if (u->wbuf != COMMSCHED_NONE &&
            (u->wbuf == pd->rbuf || u->wbuf == pd->wbuf))
            pd->racing = u->racing = 1;
        if (pd->wbuf != COMMSCHED_NONE && pd->wbuf == u->rbuf)
            pd->racing = u->racing = 1;
    }
    pd->off = calloc((size_t)x->W, sizeof *pd->off);
    pd->len = calloc((size_t)x->W, sizeof *pd->len);
    pd->data = calloc((size_t)x->W, sizeof *pd->data);
    pd->known = calloc((size_t)x->W, sizeof *pd->known);
    if (!pd->off || !pd->len || !pd->data || !pd->known)
        return -1;
    if (op == COMMSCHED_COLL_BARRIER || n == 0)
        return 0;
    uint8_t *scratch = NULL;
    for (int R = 0; R < x->W; R++) {
        int j = R % k, base = R - j;
        size_t off = 0, len = nb;
        switch (op) {
        case COMMSCHED_COLL_ALL_GATHER:
        case COMMSCHED_COLL_ALL_TO_ALL: len = nb * (size_t)k; break;
        case COMMSCHED_COLL_REDUCE_SCATTER:
            off = ip && x->r->rs == CS_REF_RS_AT_RANK ? nb * (size_t)j : 0;
            break;
        case COMMSCHED_COLL_REDUCE: if (j != 0) len = 0; break;
        default: break;
        }
        pd->off[R] = off;
        pd->len[R] = len;
        if (!len)
            continue;
        uint8_t *d = malloc(len), *kn = calloc(len, 1);
        pd->data[R] = d;
        pd->known[R] = kn;
        if (!d || !kn) {
            free(scratch);
            return -1;
        }
        memset(d, 0, len);
        const uint8_t *s, *sk;
        switch (op) {
        case COMMSCHED_COLL_ALL_REDUCE:
        case COMMSCHED_COLL_REDUCE:
        case COMMSCHED_COLL_REDUCE_SCATTER: {
            const uint8_t *in[64], *ink[64];
            size_t at = op == COMMSCHED_COLL_REDUCE_SCATTER ? nb * (size_t)j : 0;
            size_t span = op == COMMSCHED_COLL_REDUCE_SCATTER ? nb * (size_t)k : nb;
            int ok = k >= 1 && k <= 64; /* reduce_elem reads op[0] */
            for (int m = 0; ok && m < k; m++) {
                in[m] = rep_at(x, base + m, src, 0, span, &ink[m]);
                ok = in[m] != NULL;
            }
            for (size_t e = 0; ok && e < n; e++) {
                const uint8_t *opnd[64];
                int known = 1;
                for (int m = 0; m < k; m++) {
                    opnd[m] = in[m] + at + e * es;
                    known &= all_known(ink[m] + at + e * es, es);
                }
                if (known && reduce_elem(ek, rk, opnd, k, d + e * es))
                    memset(kn + e * es, 1, es);
            }
            break;
        }
        case COMMSCHED_COLL_ALL_GATHER:
            for (int m = 0; m < k; m++) {
                s = rep_at(x, base + m, src, ip ? nb * (size_t)m : 0, nb, &sk);
                if (s) {
                    memcpy(d + nb * (size_t)m, s, nb);
                    memcpy(kn + nb * (size_t)m, sk, nb);
                }
            }
            break;
        case COMMSCHED_COLL_ALL_TO_ALL:
            for (int m = 0; m < k; m++) {
                s = rep_at(x, base + m, src, nb * (size_t)j, nb, &sk);
                if (s) {
                    memcpy(d + nb * (size_t)m, s, nb);
                    memcpy(kn + nb * (size_t)m, sk, nb);
                }
            }
            break;
        case COMMSCHED_COLL_BROADCAST:
            if ((s = rep_at(x, base, src, 0, nb, &sk))) {
                memcpy(d, s, nb);
                memcpy(kn, sk, nb);
            }
            break;
        case COMMSCHED_COLL_SEND: /* from the previous rank's input */
            if ((s = rep_at(x, base + (j + k - 1) % k, sb, 0, nb, &sk))) {
                memcpy(d, s, nb);
                memcpy(kn, sk, nb);
            }
            break;
        case COMMSCHED_COLL_RECV: /* the previous rank's private buffer */
            if (!scratch && !(scratch = malloc(nb)))
                return -1;
            fill_image(scratch, nb, ek, g->n_buffers + v,
                       base + (j + k - 1) % k);
            memcpy(d, scratch, nb);
            memset(kn, 1, nb);
            break;
        default:
            break;
        }
    }
    free(scratch);
    return 0;
}

/* Collective i of the pending list completes: its results land, and this
 * rank's is what --check expects. */
static void rep_complete(replay *x, pend *pd)
{
    if (pd->done)
        return;
    pd->done = 1;
    ob_ref *r = x->r;
    for (int R = 0; R < x->W; R++) {
        size_t len = pd->len[R];
        if (len && pd->racing)
            memset(pd->known[R], 0, len);
        if (len && pd->wbuf != COMMSCHED_NONE) {
            size_t at = (size_t)R * x->g->n_buffers + pd->wbuf;
            if (x->mem[at] && (size_t)r->p->bytes[pd->wbuf] >= pd->off[R] + len) {
                memcpy(x->mem[at] + pd->off[R], pd->data[R], len);
                memcpy(x->kn[at] + pd->off[R], pd->known[R], len);
            }
        }
    }
    expect *e = &r->exp[pd->v];
    e->buf = pd->wbuf;
    e->off = pd->off[r->rank];
    e->len = pd->len[r->rank];
    e->bytes = pd->data[r->rank];
    e->known = pd->known[r->rank];
    pd->data[r->rank] = pd->known[r->rank] = NULL;
    size_t es = ek_size((cs_ekind)r->ek[pd->v]);
    for (size_t i = 0; e->len && i < e->len / es; i++)
        if (!all_known(e->known + i * es, es))
            r->unknown++;
}

static void pend_free(pend *pd, int W)
{
    for (int R = 0; pd->data && R < W; R++) {
        free(pd->data[R]);
        free(pd->known[R]);
    }
    free(pd->off);
    free(pd->len);
    free(pd->data);
    free(pd->known);
}

static int replay_run(replay *x)
{
    const cs_plan *p = x->r->p;
    const commsched_graph *g = x->g;
    uint32_t *pend_of = malloc((g->n_nodes + 1) * sizeof *pend_of);
    if (!pend_of)
        return -1;
    int rc = 0;
    for (uint32_t i = 0; i < p->n_baseline && !rc; i++)
        rc = rep_fill(x, p->baseline[i]);
    for (uint32_t i = 0; i < p->n_other && !rc; i++)
        rc = rep_fill(x, p->other[i]);
    for (uint32_t k = 0; k < p->n && !rc; k++) {
        uint32_t v = p->order[k];
        const cs_node *nd = &g->nodes[v];
        for (uint32_t e = p->alloc_at.off[v]; e < p->alloc_at.off[v + 1] && !rc; e++)
            rc = rep_fill(x, p->alloc_at.idx[e]);
        if (rc)
            break;
        if (nd->kind == COMMSCHED_NODE_COLLECTIVE) {
            pend_of[v] = x->n_pend;
            rc = rep_issue(x, v);
            if (!rc && nd->is_sync)
                rep_complete(x, &x->pend[pend_of[v]]);
        } else if (nd->kind == COMMSCHED_NODE_WAIT) {
            for (uint32_t e = p->wait_colls.off[v]; e < p->wait_colls.off[v + 1]; e++)
                rep_complete(x, &x->pend[pend_of[p->wait_colls.idx[e]]]);
        }
    }
    for (uint32_t i = 0; i < x->n_pend && !rc; i++)
        rep_complete(x, &x->pend[i]);
    free(pend_of);
    return rc;
}

/* ---- the reference ------------------------------------------------------------- */

commsched_status ob_ref_build(ob_ref **out, const cs_plan *p,
                                    int world, int rank, const uint8_t *ek,
                                    cs_ref_rs rs, commsched_error *err)
{
    const commsched_graph *g = p->g;
    uint32_t nn = g->n_nodes, nb = g->n_buffers;
    *out = NULL;
    ob_ref *r = calloc(1, sizeof *r);
    replay x = {0};
    int rc = -1;
    if (!r)
        goto done;
    r->p = p;
    r->world = world;
    r->rank = rank;
    r->rs = rs;
    r->ek = malloc(nn + 1);
    r->fill_ek = malloc(nb + 1);
    r->touched = calloc(nb + 1, 1);
    r->exp = calloc(nn + 1, sizeof *r->exp);
    if (!r->ek || !r->fill_ek || !r->touched || !r->exp)
        goto done;
    memcpy(r->ek, ek, nn);
    memset(r->fill_ek, CS_EK_F32, nb + 1);
    for (uint32_t k = p->n; k-- > 0;) { /* the first toucher wins */
        uint32_t v = p->order[k];
        if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
            continue;
        uint32_t bs[2] = {p->coll[v].in, p->coll[v].out};
        for (int i = 0; i < 2; i++)
            if (bs[i] != COMMSCHED_NONE) {
                r->touched[bs[i]] = 1;
                r->fill_ek[bs[i]] = ek[v];
            }
    }
    x.r = r;
    x.g = g;
    x.W = world;
    x.mem = calloc((size_t)world * nb + 1, sizeof *x.mem);
    x.kn = calloc((size_t)world * nb + 1, sizeof *x.kn);
    x.pend = calloc(p->n_coll + 1, sizeof *x.pend);
    if (!x.mem || !x.kn || !x.pend)
        goto done;
    rc = replay_run(&x);
done:
    if (x.mem)
        for (size_t i = 0; i < (size_t)world * nb; i++) {
            free(x.mem[i]);
            free(x.kn[i]);
        }
    free(x.mem);
    free(x.kn);
    for (uint32_t i = 0; x.pend && i < x.n_pend; i++)
        pend_free(&x.pend[i], world);
    free(x.pend);
    if (rc != 0) {
        ob_ref_free(r);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory (--check keeps a copy of "
                                   "every rank's collective buffers; try a "
                                   "smaller --size-scale)");
    }
    *out = r;
    return COMMSCHED_OK;
}

void ob_ref_free(ob_ref *r)
{
    if (!r)
        return;
    for (uint32_t v = 0; r->exp && v < r->p->g->n_nodes; v++) {
        free(r->exp[v].bytes);
        free(r->exp[v].known);
    }
    free(r->exp);
    free(r->ek);
    free(r->fill_ek);
    free(r->touched);
    free(r);
}

void ob_ref_region(const ob_ref *r, uint32_t v, uint32_t *buf,
                         size_t *off, size_t *len)
{
    const expect *e = &r->exp[v];
    *buf = e->buf;
    *off = e->off;
    *len = e->bytes ? e->len : 0;
}

uint64_t ob_ref_unknown(const ob_ref *r) { return r->unknown; }

const uint8_t *ob_ref_expect(const ob_ref *r, uint32_t v,
                             const uint8_t **known)
{
    *known = r->exp[v].known;
    return r->exp[v].bytes;
}

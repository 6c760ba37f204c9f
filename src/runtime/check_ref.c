/* commsched — the host reference of --check (check_ref.h): a replay of the
 * schedule's data flow over every rank's buffers, with per byte a mask of
 * whether its value is known exactly.
 *
 * The bytes are never held. Every value the replay makes is periodic in
 * the byte offset with period PER (a fill repeats every 7 elements, and 7
 * elements of every width divide 56 bytes), and collectives only copy
 * ranges, reduce ranges element-wise and land ranges: so a buffer is a
 * list of segments, each a length and a place in a PER-byte pattern, and
 * a reduction computes one pattern per stretch where every operand stays
 * in one segment. Memory is then O(ranks x buffers x segments), where a
 * byte image was ranks x bytes x 2 (3.3 GB a rank on the bundled example,
 * a 192 MiB step on 8 ranks), and the replay's time follows the segments
 * too. */
#include "check_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_layout.h"
#include "util.h"

/* Bytes of a pattern: 7 elements of 1, 2, 4 and 8 bytes all divide it. */
#define PER 56u

typedef struct pattern {
    uint8_t v[PER]; /* values */
    uint8_t k[PER]; /* 1: known exactly */
} pattern;

/* len bytes whose byte t is pattern `pat`'s byte (phase + t) % PER. */
typedef struct seg {
    uint64_t len;
    uint32_t pat, phase;
} seg;

/* A buffer's (or a result's) bytes: segments in order, covering size. */
typedef struct img {
    seg *s;
    size_t n, cap;
    uint64_t size;
    int present; /* allocated on that rank (a fill made it) */
} img;

typedef struct expect {
    uint32_t buf;       /* root buffer of the result, NONE: private buffer */
    size_t off, len;    /* bytes */
    img bytes;          /* what this rank must see */
    int has;            /* a result to compare */
} expect;

struct cs_check_ref {
    const cs_plan *p;
    int world, rank;
    cs_ref_rs rs;
    uint8_t *ek;        /* per node */
    uint8_t *fill_ek;   /* per buffer: the kind its values are written in */
    uint8_t *touched;   /* per buffer */
    expect *exp;        /* per node */
    pattern *pats;      /* every image's patterns; 0: nothing known */
    size_t n_pats, cap_pats;
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
    size_t es = ek_size(ek), n = bytes / es, first = n < 7 ? n : 7;
    for (size_t i = 0; i < first; i++)
        cs_elem_put(dst, i, ek, 1 + (int64_t)((i + 2u * (size_t)R + 5u * id) % 7u));
    /* Seven elements repeat: copy what is written, doubling (a fill is
     * as fast as memcpy; it runs at every allocation of a buffer). */
    for (size_t done = first * es; done < n * es;) {
        size_t run = done < n * es - done ? done : n * es - done;
        memcpy(dst + done, dst, run);
        done += run;
    }
    memset(dst + n * es, 0x5a, bytes - n * es);
}

/* ---- images --------------------------------------------------------------------- */

static int all_known(const uint8_t *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!k[i])
            return 0;
    return 1;
}

/* Bytes read at a time where an image is compared or counted: whole
 * elements of every width. */
#define CHUNK 32768u

/* A new pattern (its bytes unknown until set); its index, or -1. */
static long pat_new(cs_check_ref *r)
{
    if (cs_grow((void **)&r->pats, &r->cap_pats, r->n_pats + 1,
                sizeof *r->pats) != 0)
        return -1;
    memset(&r->pats[r->n_pats], 0, sizeof *r->pats);
    return (long)r->n_pats++;
}

static void img_free(img *m)
{
    free(m->s);
    memset(m, 0, sizeof *m);
}

/* Appends len bytes of pattern pat from phase on, joining the last segment
 * when it goes on seamlessly. */
static int img_push(img *m, uint64_t len, uint32_t pat, uint64_t phase)
{
    if (len == 0)
        return 0;
    phase %= PER;
    if (m->n > 0) {
        seg *l = &m->s[m->n - 1];
        if (l->pat == pat && (l->phase + l->len) % PER == phase) {
            l->len += len;
            return 0;
        }
    }
    if (cs_grow((void **)&m->s, &m->cap, m->n + 1, sizeof *m->s) != 0)
        return -1;
    m->s[m->n++] = (seg){len, pat, (uint32_t)phase};
    return 0;
}

/* Appends src's bytes [off, off + len). */
static int img_append(img *dst, const img *src, uint64_t off, uint64_t len)
{
    uint64_t pos = 0, end = off + len;
    for (size_t i = 0; i < src->n && pos < end; i++) {
        const seg *g = &src->s[i];
        uint64_t lo = pos > off ? pos : off;
        uint64_t hi = pos + g->len < end ? pos + g->len : end;
        if (hi > lo && img_push(dst, hi - lo, g->pat, g->phase + (lo - pos)))
            return -1;
        pos += g->len;
    }
    return 0;
}

/* dst's bytes [off, off + len) become src's [soff, soff + len). */
static int img_set(img *dst, uint64_t off, const img *src, uint64_t soff,
                   uint64_t len)
{
    img t = {0};
    t.size = dst->size;
    t.present = dst->present;
    if (img_append(&t, dst, 0, off) || img_append(&t, src, soff, len) ||
        img_append(&t, dst, off + len, dst->size - off - len)) {
        img_free(&t);
        return -1;
    }
    free(dst->s);
    *dst = t;
    return 0;
}

/* An image of len bytes, nothing known. */
static int img_unknown(img *m, uint64_t len)
{
    memset(m, 0, sizeof *m);
    m->size = len;
    return img_push(m, len, 0, 0);
}

/* The image of a fill (fill_image's values, all known). */
static int img_fill(cs_check_ref *r, img *m, uint64_t bytes, cs_ekind ek,
                    uint32_t id, int R)
{
    size_t es = ek_size(ek);
    uint64_t body = bytes / es * es;
    long a = pat_new(r), b = body < bytes ? pat_new(r) : 0;
    if (a < 0 || b < 0)
        return -1;
    fill_image(r->pats[a].v, PER, ek, id, R);
    memset(r->pats[a].k, 1, PER);
    if (b) { /* the bytes after the last whole element */
        memset(r->pats[b].v, 0x5a, PER);
        memset(r->pats[b].k, 1, PER);
    }
    free(m->s);
    memset(m, 0, sizeof *m);
    m->size = bytes;
    m->present = 1;
    return img_push(m, body, (uint32_t)a, 0) ||
           img_push(m, bytes - body, (uint32_t)b, 0);
}

/* Bytes [off, off + len) of m into v and k (len small: the caller's
 * chunk). */
static void img_read(const cs_check_ref *r, const img *m, uint64_t off,
                     uint64_t len, uint8_t *v, uint8_t *k)
{
    uint64_t pos = 0, end = off + len;
    for (size_t i = 0; i < m->n && pos < end; i++) {
        const seg *g = &m->s[i];
        uint64_t lo = pos > off ? pos : off;
        uint64_t hi = pos + g->len < end ? pos + g->len : end;
        const pattern *pt = &r->pats[g->pat];
        /* the pattern from its phase, in whole runs */
        uint64_t q = (g->phase + (lo - pos)) % PER;
        for (uint64_t t = lo; t < hi;) {
            uint64_t run = PER - q < hi - t ? PER - q : hi - t;
            memcpy(v + (t - off), pt->v + q, run);
            memcpy(k + (t - off), pt->k + q, run);
            t += run;
            q = 0;
        }
        pos += g->len;
    }
}

/* The segment of m holding byte off, and where it starts. */
static size_t img_find(const img *m, uint64_t off, uint64_t *start)
{
    uint64_t pos = 0;
    size_t i = 0;
    while (i + 1 < m->n && pos + m->s[i].len <= off)
        pos += m->s[i++].len;
    *start = pos;
    return i;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* out = the element-wise reduction of k operands, operand m being
 * ops[m]'s bytes [at[m], at[m] + nb): one pattern per stretch where every
 * operand lies in one segment; an element across a segment's edge is a
 * piece of its own. */
static int img_reduce(cs_check_ref *r, const img *const *ops,
                      const uint64_t *at, int k, uint64_t nb, cs_ekind ek,
                      cs_rkind rk, img *out)
{
    size_t es = ek_size(ek), nbp = 2;
    memset(out, 0, sizeof *out);
    out->size = nb;
    if (nb == 0)
        return 0;
    for (int m = 0; m < k; m++)
        nbp += 2 * ops[m]->n;
    uint64_t *cut = malloc(nbp * sizeof *cut);
    if (!cut)
        return -1;
    size_t nc = 0;
    cut[nc++] = 0;
    cut[nc++] = nb;
    for (int m = 0; m < k; m++) {
        uint64_t pos = 0;
        for (size_t i = 0; i < ops[m]->n; i++) {
            pos += ops[m]->s[i].len;
            if (pos <= at[m] || pos >= at[m] + nb)
                continue;
            uint64_t q = pos - at[m], e = q / es * es;
            cut[nc++] = e;
            if (e != q)
                cut[nc++] = e + es;
        }
    }
    qsort(cut, nc, sizeof *cut, cmp_u64);
    int rc = 0;
    for (size_t c = 0; c + 1 < nc && rc == 0; c++) {
        uint64_t a = cut[c], b = cut[c + 1];
        if (b <= a)
            continue;
        /* The new pattern first: it may move the table the operands'
         * pattern pointers below point into. */
        long np = pat_new(r);
        if (np < 0) {
            rc = -1;
            break;
        }
        const pattern *pt[64];
        uint64_t ph[64];
        int single = 1;
        for (int m = 0; m < k; m++) {
            uint64_t start;
            size_t i = img_find(ops[m], at[m] + a, &start);
            const seg *g = &ops[m]->s[i];
            single &= start + g->len >= at[m] + b;
            pt[m] = &r->pats[g->pat];
            ph[m] = g->phase + (at[m] + a - start);
        }
        pattern *o = &r->pats[np];
        /* single: PER bytes make the stretch's pattern; else the one
         * element there, read whole from each operand. */
        uint64_t len = single ? (b - a < PER ? b - a : PER) : es;
        for (uint64_t t = 0; t < len; t += es) {
            uint8_t val[64][8], known = 1;
            const uint8_t *opnd[64];
            for (int m = 0; m < k; m++) {
                if (single) {
                    for (size_t j = 0; j < es; j++) {
                        uint64_t q = (ph[m] + t + j) % PER;
                        val[m][j] = pt[m]->v[q];
                        known &= pt[m]->k[q];
                    }
                } else {
                    uint8_t kn[8];
                    img_read(r, ops[m], at[m] + a + t, es, val[m], kn);
                    for (size_t j = 0; j < es; j++)
                        known &= kn[j];
                }
                opnd[m] = val[m];
            }
            if (known && reduce_elem(ek, rk, opnd, k, o->v + t))
                memset(o->k + t, 1, es);
        }
        if (single)
            rc = img_push(out, b - a, (uint32_t)np, 0);
        else
            for (uint64_t t = a; t < b && rc == 0; t += es)
                rc = img_push(out, es, (uint32_t)np, 0);
    }
    free(cut);
    return rc;
}

/* ---- the replay ---------------------------------------------------------------- */

typedef struct pend {
    uint32_t v;
    uint32_t rbuf, wbuf;  /* roots it reads / writes (NONE: none) */
    int racing;           /* in flight beside a collective that writes what
                             it reads or writes, or reads what it writes */
    int done;
    size_t *off, *len;    /* per rank */
    img *data;            /* per rank: the result, until it lands */
} pend;

typedef struct replay {
    cs_check_ref *r;
    const commsched_graph *g;
    int W;
    img *mem;             /* [rank * n_buffers + b] */
    pend *pend;
    uint32_t n_pend;
} replay;

static int rep_fill(replay *x, uint32_t b)
{
    const cs_plan *p = x->r->p;
    if (b == COMMSCHED_NONE || !x->r->touched[b] || p->bytes[b] <= 0)
        return 0;
    for (int R = 0; R < x->W; R++)
        if (img_fill(x->r, &x->mem[(size_t)R * x->g->n_buffers + b],
                     (uint64_t)p->bytes[b], (cs_ekind)x->r->fill_ek[b], b,
                     R) != 0)
            return -1;
    return 0;
}

/* Buffer b on rank R when it holds [off, off + len), or NULL when it is
 * absent or too small (then nothing about it is known). */
static const img *rep_at(replay *x, int R, uint32_t b, size_t off,
                         size_t len)
{
    if (b == COMMSCHED_NONE || (size_t)x->r->p->bytes[b] < off + len)
        return NULL;
    const img *m = &x->mem[(size_t)R * x->g->n_buffers + b];
    return m->present ? m : NULL;
}

/* d's bytes [doff, doff + len) from s's [soff, ...), when s is there. */
static int rep_copy(img *d, uint64_t doff, const img *s, uint64_t soff,
                    uint64_t len)
{
    return s ? img_set(d, doff, s, soff, len) : 0;
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
    if (!pd->off || !pd->len || !pd->data)
        return -1;
    if (op == COMMSCHED_COLL_BARRIER || n == 0)
        return 0;
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
        img *d = &pd->data[R];
        int rc = 0;
        switch (op) {
        case COMMSCHED_COLL_ALL_REDUCE:
        case COMMSCHED_COLL_REDUCE:
        case COMMSCHED_COLL_REDUCE_SCATTER: {
            const img *in[64];
            uint64_t at[64];
            size_t first = op == COMMSCHED_COLL_REDUCE_SCATTER ? nb * (size_t)j : 0;
            size_t span = op == COMMSCHED_COLL_REDUCE_SCATTER ? nb * (size_t)k : nb;
            int ok = k >= 1 && k <= 64; /* reduce_elem reads op[0] */
            for (int m = 0; ok && m < k; m++) {
                in[m] = rep_at(x, base + m, src, 0, span);
                at[m] = first;
                ok = in[m] != NULL;
            }
            rc = ok ? img_reduce(x->r, in, at, k, nb, ek, rk, d)
                    : img_unknown(d, nb);
            break;
        }
        case COMMSCHED_COLL_ALL_GATHER:
            rc = img_unknown(d, len);
            for (int m = 0; m < k && rc == 0; m++)
                rc = rep_copy(d, nb * (size_t)m,
                              rep_at(x, base + m, src,
                                     ip ? nb * (size_t)m : 0, nb),
                              ip ? nb * (size_t)m : 0, nb);
            break;
        case COMMSCHED_COLL_ALL_TO_ALL:
            rc = img_unknown(d, len);
            for (int m = 0; m < k && rc == 0; m++)
                rc = rep_copy(d, nb * (size_t)m,
                              rep_at(x, base + m, src, nb * (size_t)j, nb),
                              nb * (size_t)j, nb);
            break;
        case COMMSCHED_COLL_BROADCAST:
            rc = img_unknown(d, len);
            if (rc == 0)
                rc = rep_copy(d, 0, rep_at(x, base, src, 0, nb), 0, nb);
            break;
        case COMMSCHED_COLL_SEND: /* from the previous rank's input */
            rc = img_unknown(d, len);
            if (rc == 0)
                rc = rep_copy(d, 0,
                              rep_at(x, base + (j + k - 1) % k, sb, 0, nb), 0,
                              nb);
            break;
        case COMMSCHED_COLL_RECV: /* the previous rank's private buffer */
            rc = img_fill(x->r, d, nb, ek, g->n_buffers + v,
                          base + (j + k - 1) % k);
            break;
        default:
            rc = img_unknown(d, len);
            break;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Elements of m not wholly known (read in chunks: O(bytes) time, not
 * memory). */
static uint64_t count_unknown(const cs_check_ref *r, const img *m,
                              size_t es)
{
    uint8_t v[CHUNK], k[CHUNK];
    uint64_t unknown = 0, whole = m->size / es * es;
    for (uint64_t at = 0; at < whole; at += CHUNK) {
        uint64_t len = whole - at < CHUNK ? whole - at : CHUNK;
        img_read(r, m, at, len, v, k);
        if (!memchr(k, 0, len))
            continue;
        for (uint64_t i = 0; i < len; i += es)
            unknown += !all_known(k + i, es);
    }
    return unknown;
}

/* Collective i of the pending list completes: its results land, and this
 * rank's is what --check expects. */
static int rep_complete(replay *x, pend *pd)
{
    if (pd->done)
        return 0;
    pd->done = 1;
    cs_check_ref *r = x->r;
    for (int R = 0; R < x->W; R++) {
        size_t len = pd->len[R];
        img *d = &pd->data[R];
        if (len && pd->racing) {
            img_free(d);
            if (img_unknown(d, len) != 0)
                return -1;
        }
        if (len && pd->wbuf != COMMSCHED_NONE) {
            img *w = &x->mem[(size_t)R * x->g->n_buffers + pd->wbuf];
            if (w->present &&
                (size_t)r->p->bytes[pd->wbuf] >= pd->off[R] + len &&
                img_set(w, pd->off[R], d, 0, len) != 0)
                return -1;
        }
    }
    expect *e = &r->exp[pd->v];
    e->buf = pd->wbuf;
    e->off = pd->off[r->rank];
    e->len = pd->len[r->rank];
    e->bytes = pd->data[r->rank];
    e->has = e->len > 0;
    memset(&pd->data[r->rank], 0, sizeof pd->data[r->rank]);
    if (e->has)
        r->unknown +=
            count_unknown(r, &e->bytes, ek_size((cs_ekind)r->ek[pd->v]));
    return 0;
}

static void pend_free(pend *pd, int W)
{
    for (int R = 0; pd->data && R < W; R++)
        img_free(&pd->data[R]);
    free(pd->off);
    free(pd->len);
    free(pd->data);
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
                rc = rep_complete(x, &x->pend[pend_of[v]]);
        } else if (nd->kind == COMMSCHED_NODE_WAIT) {
            for (uint32_t e = p->wait_colls.off[v];
                 e < p->wait_colls.off[v + 1] && !rc; e++)
                rc = rep_complete(x, &x->pend[pend_of[p->wait_colls.idx[e]]]);
        }
    }
    for (uint32_t i = 0; i < x->n_pend && !rc; i++)
        rc = rep_complete(x, &x->pend[i]);
    free(pend_of);
    return rc;
}

/* ---- the reference ------------------------------------------------------------- */

commsched_status cs_check_ref_build(cs_check_ref **out, const cs_plan *p,
                                    int world, int rank, const uint8_t *ek,
                                    cs_ref_rs rs, commsched_error *err)
{
    const commsched_graph *g = p->g;
    uint32_t nn = g->n_nodes, nb = g->n_buffers;
    *out = NULL;
    cs_check_ref *r = calloc(1, sizeof *r);
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
    if (!r->ek || !r->fill_ek || !r->touched || !r->exp || pat_new(r) != 0)
        goto done; /* pattern 0: nothing known */
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
    x.pend = calloc(p->n_coll + 1, sizeof *x.pend);
    if (!x.mem || !x.pend)
        goto done;
    rc = replay_run(&x);
done:
    if (x.mem)
        for (size_t i = 0; i < (size_t)world * nb; i++)
            img_free(&x.mem[i]);
    free(x.mem);
    for (uint32_t i = 0; x.pend && i < x.n_pend; i++)
        pend_free(&x.pend[i], world);
    free(x.pend);
    if (rc != 0) {
        cs_check_ref_free(r);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory (--check's reference)");
    }
    *out = r;
    return COMMSCHED_OK;
}

void cs_check_ref_free(cs_check_ref *r)
{
    if (!r)
        return;
    for (uint32_t v = 0; r->exp && v < r->p->g->n_nodes; v++)
        img_free(&r->exp[v].bytes);
    free(r->exp);
    free(r->ek);
    free(r->fill_ek);
    free(r->touched);
    free(r->pats);
    free(r);
}

int cs_check_ref_touched(const cs_check_ref *r, uint32_t b)
{
    return b != COMMSCHED_NONE && r->touched[b];
}

void cs_check_ref_fill(const cs_check_ref *r, uint32_t b, void *dst,
                       size_t bytes)
{
    fill_image(dst, bytes, (cs_ekind)r->fill_ek[b], b, r->rank);
}

void cs_check_ref_fill_scratch(const cs_check_ref *r, uint32_t v, void *dst,
                               size_t bytes)
{
    fill_image(dst, bytes, (cs_ekind)r->ek[v], r->p->g->n_buffers + v,
               r->rank);
}

void cs_check_ref_region(const cs_check_ref *r, uint32_t v, uint32_t *buf,
                         size_t *off, size_t *len)
{
    const expect *e = &r->exp[v];
    *buf = e->buf;
    *off = e->off;
    *len = e->has ? e->len : 0;
}

long cs_check_ref_verify(const cs_check_ref *r, uint32_t v,
                         const void *region, double *want, double *got)
{
    const expect *e = &r->exp[v];
    cs_ekind ek = (cs_ekind)r->ek[v];
    size_t es = ek_size(ek);
    const uint8_t *gotb = region;
    uint8_t wv[CHUNK], wk[CHUNK];
    uint64_t whole = e->has ? e->len / es * es : 0;
    for (uint64_t at = 0; at < whole; at += CHUNK) {
        uint64_t len = whole - at < CHUNK ? whole - at : CHUNK;
        img_read(r, &e->bytes, at, len, wv, wk);
        if (memcmp(wv, gotb + at, len) == 0)
            continue; /* equal bytes: nothing wrong, known or not */
        for (uint64_t i = 0; i < len; i += es) {
            if (!all_known(wk + i, es) ||
                memcmp(wv + i, gotb + at + i, es) == 0)
                continue;
            if (want)
                *want = cs_elem_get(wv, i / es, ek);
            if (got)
                *got = cs_elem_get(gotb + at, i / es, ek);
            return (long)((at + i) / es);
        }
    }
    return -1;
}

uint64_t cs_check_ref_unknown(const cs_check_ref *r) { return r->unknown; }

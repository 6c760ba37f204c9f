/* The HLO text parser: HloModule's header, its computations and their
 * instructions, as XLA's printer writes them (HloModule::ToString, the
 * `*.after_optimizations.txt` dumps):
 *
 *   HloModule jit_step, is_scheduled=true, ..., num_partitions=8
 *   FileNames / FunctionNames / FileLocations / StackFrames   (skipped)
 *   %fused_computation (param_0: f32[8,256]) -> f32[8,256] {
 *     %param_0 = f32[8,256]{1,0} parameter(0)
 *     ROOT %dot.5 = f32[8,256]{1,0} dot(%param_0, ...), lhs_contracting_dims={1}, ...
 *   }
 *   ENTRY %main (...) -> (...) { ... }
 *
 * Operands may carry their shapes (`f32[8]{0} %x`, older printers) or not;
 * names may go without '%'; `/ *index=5* /` comments may stand anywhere
 * blanks may. Attribute values are kept as text spans (balanced brackets
 * and quoted strings), read by hlo_build.c when it needs one, so an
 * attribute this reader does not know is never an error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

/* Bits per element; sub-byte types take a byte each unless the layout
 * packs them (E(bits)), as XLA's CPU and GPU layouts do by default. */
static const hlo_etype etypes[] = {
    {"pred", 8, COMMSCHED_DTYPE_BOOL},
    {"s1", 1, COMMSCHED_DTYPE_NONE},
    {"s2", 2, COMMSCHED_DTYPE_NONE},
    {"s4", 4, COMMSCHED_DTYPE_NONE},
    {"s8", 8, COMMSCHED_DTYPE_INT8},
    {"s16", 16, COMMSCHED_DTYPE_INT16},
    {"s32", 32, COMMSCHED_DTYPE_INT32},
    {"s64", 64, COMMSCHED_DTYPE_INT64},
    {"u1", 1, COMMSCHED_DTYPE_NONE},
    {"u2", 2, COMMSCHED_DTYPE_NONE},
    {"u4", 4, COMMSCHED_DTYPE_NONE},
    {"u8", 8, COMMSCHED_DTYPE_UINT8},
    {"u16", 16, COMMSCHED_DTYPE_NONE},
    {"u32", 32, COMMSCHED_DTYPE_NONE},
    {"u64", 64, COMMSCHED_DTYPE_NONE},
    {"f16", 16, COMMSCHED_DTYPE_FLOAT16},
    {"bf16", 16, COMMSCHED_DTYPE_BFLOAT16},
    {"f32", 32, COMMSCHED_DTYPE_FLOAT32},
    {"f64", 64, COMMSCHED_DTYPE_FLOAT64},
    {"c64", 64, COMMSCHED_DTYPE_NONE},
    {"c128", 128, COMMSCHED_DTYPE_NONE},
    {"f4e2m1fn", 4, COMMSCHED_DTYPE_NONE},
    {"f8e3m4", 8, COMMSCHED_DTYPE_NONE},
    {"f8e4m3", 8, COMMSCHED_DTYPE_NONE},
    {"f8e4m3fn", 8, COMMSCHED_DTYPE_FLOAT8_E4M3FN},
    {"f8e4m3fnuz", 8, COMMSCHED_DTYPE_NONE},
    {"f8e4m3b11fnuz", 8, COMMSCHED_DTYPE_NONE},
    {"f8e5m2", 8, COMMSCHED_DTYPE_FLOAT8_E5M2},
    {"f8e5m2fnuz", 8, COMMSCHED_DTYPE_NONE},
    {"f8e8m0fnu", 8, COMMSCHED_DTYPE_NONE},
    {"opaque", 0, COMMSCHED_DTYPE_NONE},
};
#define N_ETYPES (sizeof etypes / sizeof etypes[0])

const hlo_etype *hlo_etype_at(unsigned i)
{
    return i < N_ETYPES ? &etypes[i] : NULL;
}

/* Nesting deeper than this (brackets, tuple shapes) is refused: no real
 * dump comes near it, and it bounds the parser's recursion. */
#define MAX_DEPTH 64

typedef struct cur {
    const char *s;
    size_t n, i;
    int line, col;
    hlo_module *m;
    commsched_error *err;
} cur;

int hlo_span_eq(hlo_span s, const char *t)
{
    size_t l = strlen(t);
    return s.len == l && memcmp(s.p, t, l) == 0;
}

commsched_status hlo_fail(commsched_error *err, commsched_status status,
                          hlo_span s, const char *fmt, ...)
{
    if (!err || err->status != COMMSCHED_OK)
        return status;
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    commsched_error_set(err, status, NULL, "%s", text);
    err->line = s.line > 0 ? s.line : 1;
    err->column = s.col > 0 ? s.col : 1;
    return status;
}

static int peek(const cur *c)
{
    return c->i < c->n ? (unsigned char)c->s[c->i] : -1;
}

static int peek2(const cur *c)
{
    return c->i + 1 < c->n ? (unsigned char)c->s[c->i + 1] : -1;
}

static void adv(cur *c)
{
    if (c->i >= c->n)
        return;
    if (c->s[c->i] == '\n') {
        c->line++;
        c->col = 1;
    } else {
        c->col++;
    }
    c->i++;
}

static hlo_span here(const cur *c)
{
    hlo_span s = {c->s + c->i, 0, c->line, c->col};
    return s;
}

static void finish_span(const cur *c, hlo_span *s)
{
    s->len = (uint32_t)(size_t)(c->s + c->i - s->p);
}

static commsched_status fail_here(cur *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static commsched_status fail_here(cur *c, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return hlo_fail(c->err, COMMSCHED_EPARSE, here(c), "%s", text);
}

/* What stands at the cursor, for messages: `'x'`, "end of line", ... */
static const char *what_here(const cur *c, char *buf, size_t size)
{
    int ch = peek(c);
    if (ch < 0)
        return "end of file";
    if (ch == '\n')
        return "end of line";
    if (ch == 0)
        return "a NUL byte";
    if (ch < 0x20 || ch >= 0x7f)
        snprintf(buf, size, "byte 0x%02x", (unsigned)ch);
    else
        snprintf(buf, size, "'%c'", ch);
    return buf;
}

static commsched_status expected(cur *c, const char *what)
{
    char buf[16];
    return fail_here(c, "expected %s, got %s", what,
                     what_here(c, buf, sizeof buf));
}

/* Blanks and comments; newlines too when `lines`. */
static commsched_status skip_blank(cur *c, int lines)
{
    for (;;) {
        int ch = peek(c);
        if (ch == ' ' || ch == '\t' || ch == '\r' || (lines && ch == '\n')) {
            adv(c);
        } else if (ch == '/' && peek2(c) == '*') {
            hlo_span at = here(c);
            adv(c);
            adv(c);
            while (c->i < c->n && !(peek(c) == '*' && peek2(c) == '/'))
                adv(c);
            if (c->i >= c->n)
                return hlo_fail(c->err, COMMSCHED_EPARSE, at,
                                "unterminated comment");
            adv(c);
            adv(c);
        } else {
            return COMMSCHED_OK;
        }
    }
}

static int is_name_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' ||
           ch == '$';
}

/* A name, '%' first or not; the span leaves the '%' out. */
static commsched_status name(cur *c, hlo_span *out, const char *what)
{
    hlo_span at = here(c);
    if (peek(c) == '%')
        adv(c);
    *out = here(c);
    while (is_name_char(peek(c)))
        adv(c);
    finish_span(c, out);
    if (out->len == 0) {
        c->i = (size_t)(at.p - c->s);
        c->line = at.line;
        c->col = at.col;
        return expected(c, what);
    }
    return COMMSCHED_OK;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* Room for `need` elements. */
static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    while (need > *cap)
        if (grow(p, cap, *cap, elem) != 0)
            return -1;
    return 0;
}

static commsched_status oom(cur *c)
{
    return commsched_error_set(c->err, COMMSCHED_ENOMEM, NULL,
                               "out of memory");
}

/* Skips one bracketed or quoted run starting at the cursor, and returns
 * with the cursor after it. Strings take backslash escapes. `oneline`:
 * the run ends on its line (an instruction is one line: a bracket left
 * open would otherwise swallow the lines after it). */
static commsched_status skip_group(cur *c, int oneline)
{
    char stack[MAX_DEPTH];
    int depth = 0;
    hlo_span opened[MAX_DEPTH];
    do {
        int ch = peek(c);
        if (ch < 0 || (oneline && ch == '\n'))
            return hlo_fail(c->err, COMMSCHED_EPARSE, opened[depth - 1],
                            "'%c' is never closed%s", stack[depth - 1],
                            ch < 0 ? "" : " on its line");
        if (ch == 0)
            return fail_here(c, "unexpected NUL byte");
        if (ch == '"' || ch == '\'') {
            hlo_span at = here(c);
            adv(c);
            while (c->i < c->n && peek(c) != ch && peek(c) != '\n') {
                if (peek(c) == '\\')
                    adv(c);
                adv(c);
            }
            if (peek(c) != ch)
                return hlo_fail(c->err, COMMSCHED_EPARSE, at,
                                "unterminated string");
            adv(c);
            continue;
        }
        if (ch == '(' || ch == '[' || ch == '{') {
            if (depth == MAX_DEPTH)
                return fail_here(c, "brackets nested deeper than %d",
                                 MAX_DEPTH);
            stack[depth] = (char)ch;
            opened[depth] = here(c);
            depth++;
        } else if (ch == ')' || ch == ']' || ch == '}') {
            char want = stack[depth - 1] == '(' ? ')'
                        : stack[depth - 1] == '[' ? ']' : '}';
            if (ch != want)
                return fail_here(c, "'%c' closes the '%c' opened at %d:%d",
                                 ch, stack[depth - 1], opened[depth - 1].line,
                                 opened[depth - 1].col);
            depth--;
        }
        adv(c);
    } while (depth > 0);
    return COMMSCHED_OK;
}

/* An attribute value: everything up to a ',' or a line end outside
 * brackets and strings. */
static commsched_status value(cur *c, hlo_span *out)
{
    *out = here(c);
    for (;;) {
        int ch = peek(c);
        if (ch < 0 || ch == ',' || ch == '\n')
            break;
        if (ch == 0)
            return fail_here(c, "unexpected NUL byte");
        if (ch == ')' || ch == ']' || ch == '}')
            return fail_here(c, "'%c' closes nothing", ch);
        if (ch == '(' || ch == '[' || ch == '{' || ch == '"' || ch == '\'') {
            commsched_status st = skip_group(c, 1);
            if (st != COMMSCHED_OK)
                return st;
        } else {
            adv(c);
        }
    }
    finish_span(c, out);
    while (out->len > 0 && (out->p[out->len - 1] == ' ' ||
                            out->p[out->len - 1] == '\t' ||
                            out->p[out->len - 1] == '\r'))
        out->len--;
    if (out->len == 0)
        return expected(c, "a value");
    return COMMSCHED_OK;
}

/* ", key=value" pairs up to the end of the line; kept when `keep`. */
static commsched_status attrs(cur *c, int keep, uint32_t *first,
                              uint32_t *count)
{
    hlo_module *m = c->m;
    commsched_status st;
    *first = (uint32_t)m->n_attrs;
    *count = 0;
    for (;;) {
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        if (peek(c) != ',')
            return COMMSCHED_OK;
        adv(c);
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        hlo_attr a;
        a.key = here(c);
        while (is_name_char(peek(c)))
            adv(c);
        finish_span(c, &a.key);
        if (a.key.len == 0)
            return expected(c, "an attribute name");
        if (peek(c) != '=')
            return expected(c, "'=' after the attribute name");
        adv(c);
        if ((st = value(c, &a.val)) != COMMSCHED_OK)
            return st;
        if (!keep)
            continue;
        if (grow((void **)&m->attrs, &m->cap_attrs, m->n_attrs,
                 sizeof *m->attrs) != 0)
            return oom(c);
        m->attrs[m->n_attrs++] = a;
        (*count)++;
    }
}

static commsched_status push_shape(cur *c, const hlo_shape *s, uint32_t *out)
{
    hlo_module *m = c->m;
    if (grow((void **)&m->shapes, &m->cap_shapes, m->n_shapes,
             sizeof *m->shapes) != 0)
        return oom(c);
    *out = (uint32_t)m->n_shapes;
    m->shapes[m->n_shapes++] = *s;
    return COMMSCHED_OK;
}

/* A layout "{1,0:T(8,128)E(4)S(1)}": the packed element size, 0 when it
 * gives none. */
static unsigned layout_bits(hlo_span lay)
{
    const char *colon = memchr(lay.p, ':', lay.len);
    if (!colon)
        return 0;
    for (const char *p = colon; p + 2 < lay.p + lay.len; p++)
        if (p[0] == 'E' && p[1] == '(') {
            unsigned v = 0;
            for (p += 2; p < lay.p + lay.len && *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (unsigned)(*p - '0');
            return v <= 64 ? v : 0;
        }
    return 0;
}

static commsched_status shape(cur *c, int depth, uint32_t *out);

static commsched_status tuple_shape(cur *c, int depth, uint32_t *out)
{
    hlo_module *m = c->m;
    hlo_span at = here(c);
    commsched_status st;
    if (depth >= MAX_DEPTH)
        return fail_here(c, "tuple shapes nested deeper than %d", MAX_DEPTH);
    adv(c); /* ( */
    uint32_t kids[16];
    uint32_t *list = kids, n = 0, cap = 16;
    hlo_shape t = {0};
    t.kind = HLO_TUPLE;
    for (;;) {
        if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
            goto done;
        if (peek(c) == ')' && n == 0)
            break;
        uint32_t k;
        if ((st = shape(c, depth + 1, &k)) != COMMSCHED_OK)
            goto done;
        if (n == cap) {
            uint32_t *nl = malloc(2 * cap * sizeof *nl);
            if (!nl) {
                st = oom(c);
                goto done;
            }
            memcpy(nl, list, n * sizeof *nl);
            if (list != kids)
                free(list);
            list = nl;
            cap *= 2;
        }
        list[n++] = k;
        t.leaves += m->shapes[k].leaves;
        t.bytes += m->shapes[k].bytes;
        if (t.bytes > COMMSCHED_MAX_SIZE) {
            st = hlo_fail(c->err, COMMSCHED_EPARSE, at,
                          "the tuple's leaves add up beyond the format's "
                          "limit of 2^53 bytes");
            goto done;
        }
        if (t.leaves > HLO_MAX_NODES) {
            st = hlo_fail(c->err, COMMSCHED_EPARSE, at,
                          "a tuple of more than %u leaves", HLO_MAX_NODES);
            goto done;
        }
        if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
            goto done;
        if (peek(c) == ',') {
            adv(c);
            continue;
        }
        if (peek(c) != ')') {
            st = expected(c, "',' or ')' in the tuple shape");
            goto done;
        }
        break;
    }
    adv(c); /* ) */
    if (reserve((void **)&m->children, &m->cap_children, m->n_children + n,
                sizeof *m->children) != 0) {
        st = oom(c);
        goto done;
    }
    t.children = (uint32_t)m->n_children;
    t.n = n;
    if (n) /* an empty tuple "()" may have no children array yet */
        memcpy(m->children + m->n_children, list, n * sizeof *list);
    m->n_children += n;
    st = push_shape(c, &t, out);
done:
    if (list != kids)
        free(list);
    return st;
}

static commsched_status shape(cur *c, int depth, uint32_t *out)
{
    hlo_module *m = c->m;
    commsched_status st;
    if (peek(c) == '(')
        return tuple_shape(c, depth, out);
    hlo_span ty = here(c);
    while ((peek(c) >= 'a' && peek(c) <= 'z') || (peek(c) >= '0' &&
                                                  peek(c) <= '9'))
        adv(c);
    finish_span(c, &ty);
    if (ty.len == 0)
        return expected(c, "a shape");
    hlo_shape s = {0};
    s.leaves = 1;
    if (hlo_span_eq(ty, "token")) {
        s.kind = HLO_TOKEN;
    } else {
        unsigned k = 0;
        while (k < N_ETYPES && !hlo_span_eq(ty, etypes[k].name))
            k++;
        if (k == N_ETYPES)
            return hlo_fail(c->err, COMMSCHED_EPARSE, ty,
                            "unknown element type \"%.*s\"", (int)ty.len,
                            ty.p);
        s.kind = HLO_ARRAY;
        s.etype = (uint8_t)k;
    }
    if (peek(c) != '[')
        return expected(c, "'[' after the element type");
    adv(c);
    s.dims = (uint32_t)m->n_dims;
    double elems = 1;
    int64_t prod = 1;
    for (;;) {
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        if (peek(c) == ']' && s.rank == 0)
            break;
        hlo_span d = here(c);
        if (peek(c) == '<' && peek2(c) == '=') { /* bounded dynamic */
            adv(c);
            adv(c);
        } else if (peek(c) == '?') {
            return fail_here(c, "an unbounded dynamic dimension: the size "
                                "is unknown");
        }
        if (!(peek(c) >= '0' && peek(c) <= '9'))
            return expected(c, "a dimension size");
        int64_t v = 0;
        while (peek(c) >= '0' && peek(c) <= '9') {
            if (v > COMMSCHED_MAX_SIZE)
                return hlo_fail(c->err, COMMSCHED_EPARSE, d,
                                "dimension beyond 2^53");
            v = v * 10 + (peek(c) - '0');
            adv(c);
        }
        if (v > COMMSCHED_MAX_SIZE)
            return hlo_fail(c->err, COMMSCHED_EPARSE, d,
                            "dimension beyond 2^53");
        if (s.rank == UINT16_MAX)
            return fail_here(c, "more than %u dimensions", UINT16_MAX);
        if (grow((void **)&m->dims, &m->cap_dims, m->n_dims,
                 sizeof *m->dims) != 0)
            return oom(c);
        m->dims[m->n_dims++] = v;
        s.rank++;
        elems *= (double)v;
        prod = elems <= (double)COMMSCHED_MAX_SIZE ? prod * v : prod;
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        if (peek(c) == ',') {
            adv(c);
            continue;
        }
        if (peek(c) != ']')
            return expected(c, "',' or ']' in the dimensions");
        break;
    }
    adv(c); /* ] */
    unsigned packed = 0;
    if (peek(c) == '{') {
        hlo_span lay = here(c);
        if ((st = skip_group(c, 1)) != COMMSCHED_OK)
            return st;
        finish_span(c, &lay);
        packed = layout_bits(lay);
    }
    if (s.kind == HLO_ARRAY) {
        unsigned bits = etypes[s.etype].bits;
        double bytes = bits >= 8 ? elems * (bits / 8)
                       : packed ? (elems * packed + 7) / 8 : elems;
        if (bits == 0)
            bytes = 0;
        if (bytes > (double)COMMSCHED_MAX_SIZE)
            return hlo_fail(c->err, COMMSCHED_EPARSE, ty,
                            "a shape of %.0f bytes is beyond the format's "
                            "limit of 2^53 bytes",
                            bytes);
        s.bytes = bits >= 8 ? prod * (int64_t)(bits / 8)
                  : bits == 0 ? 0
                  : packed ? (prod * (int64_t)packed + 7) / 8 : prod;
    }
    return push_shape(c, &s, out);
}

/* The operand list of a call, after '(' up to and with ')'. */
static commsched_status operands(cur *c, hlo_instr *in)
{
    hlo_module *m = c->m;
    commsched_status st;
    in->ops = (uint32_t)m->n_operands;
    for (;;) {
        if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
            return st;
        if (peek(c) == ')' && in->n_ops == 0)
            break;
        hlo_operand o = {{0}, UINT32_MAX};
        size_t at = c->i;
        int line = c->line, col = c->col;
        if (peek(c) == '(') { /* a tuple-shaped operand's shape */
            uint32_t sh;
            if ((st = shape(c, 0, &sh)) != COMMSCHED_OK)
                return st;
            if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
                return st;
        } else if (peek(c) != '%') {
            while (is_name_char(peek(c)))
                adv(c);
            if (peek(c) == '[') { /* it was an element type */
                c->i = at;
                c->line = line;
                c->col = col;
                uint32_t sh;
                if ((st = shape(c, 0, &sh)) != COMMSCHED_OK)
                    return st;
                if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
                    return st;
            } else {
                c->i = at;
                c->line = line;
                c->col = col;
            }
        }
        if ((st = name(c, &o.name, "an operand")) != COMMSCHED_OK)
            return st;
        if (grow((void **)&m->operands, &m->cap_operands, m->n_operands,
                 sizeof *m->operands) != 0)
            return oom(c);
        m->operands[m->n_operands++] = o;
        in->n_ops++;
        if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
            return st;
        if (peek(c) == ',') {
            adv(c);
            continue;
        }
        if (peek(c) != ')')
            return expected(c, "',' or ')' after the operand");
        break;
    }
    adv(c);
    return COMMSCHED_OK;
}

static commsched_status instruction(cur *c, uint32_t comp, int *is_root)
{
    hlo_module *m = c->m;
    commsched_status st;
    hlo_instr in = {0};
    in.comp = comp;
    *is_root = 0;
    hlo_span w = here(c);
    while (is_name_char(peek(c)))
        adv(c);
    finish_span(c, &w);
    if (hlo_span_eq(w, "ROOT")) {
        *is_root = 1;
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
    } else {
        c->i = (size_t)(w.p - c->s);
        c->line = w.line;
        c->col = w.col;
    }
    if ((st = name(c, &in.name, "an instruction name")) != COMMSCHED_OK)
        return st;
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    if (peek(c) != '=')
        return expected(c, "'=' after the instruction name");
    adv(c);
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    if ((st = shape(c, 0, &in.shape)) != COMMSCHED_OK)
        return st;
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    in.opcode = here(c);
    while ((peek(c) >= 'a' && peek(c) <= 'z') || (peek(c) >= '0' &&
                                                  peek(c) <= '9') ||
           peek(c) == '-' || peek(c) == '_')
        adv(c);
    finish_span(c, &in.opcode);
    if (in.opcode.len == 0)
        return expected(c, "an opcode");
    if (peek(c) != '(')
        return expected(c, "'(' after the opcode");
    if (hlo_span_eq(in.opcode, "constant") ||
        hlo_span_eq(in.opcode, "parameter")) {
        hlo_span open = here(c);
        if ((st = skip_group(c, 0)) != COMMSCHED_OK)
            return st;
        in.args = open;
        in.args.p++;
        in.args.col++;
        in.args.len = (uint32_t)(size_t)(c->s + c->i - in.args.p - 1);
    } else {
        adv(c);
        if ((st = operands(c, &in)) != COMMSCHED_OK)
            return st;
    }
    if ((st = attrs(c, 1, &in.attrs, &in.n_attrs)) != COMMSCHED_OK)
        return st;
    if (peek(c) >= 0 && peek(c) != '\n')
        return expected(c, "',' or the end of the line");
    if (grow((void **)&m->instrs, &m->cap_instrs, m->n_instrs,
             sizeof *m->instrs) != 0)
        return oom(c);
    m->instrs[m->n_instrs++] = in;
    return COMMSCHED_OK;
}

static commsched_status computation(cur *c, int entry)
{
    hlo_module *m = c->m;
    commsched_status st;
    hlo_comp k = {{0}, 0, 0, UINT32_MAX, entry};
    if ((st = name(c, &k.name, "a computation name")) != COMMSCHED_OK)
        return st;
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    if (peek(c) == '(') { /* the signature: parameters, then -> shape */
        if ((st = skip_group(c, 1)) != COMMSCHED_OK)
            return st;
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        if (peek(c) != '-' || peek2(c) != '>')
            return expected(c, "'->' after the parameters");
        adv(c);
        adv(c);
        if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
            return st;
        uint32_t result;
        if ((st = shape(c, 0, &result)) != COMMSCHED_OK)
            return st;
    }
    uint32_t first, count; /* execution_thread=... and the like */
    if ((st = attrs(c, 0, &first, &count)) != COMMSCHED_OK)
        return st;
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    if (peek(c) != '{')
        return expected(c, "'{' opening the computation");
    adv(c);
    uint32_t idx = (uint32_t)m->n_comps;
    k.first = (uint32_t)m->n_instrs;
    for (;;) {
        if ((st = skip_blank(c, 1)) != COMMSCHED_OK)
            return st;
        if (peek(c) == '}') {
            adv(c);
            break;
        }
        if (peek(c) < 0)
            return hlo_fail(c->err, COMMSCHED_EPARSE, k.name,
                            "computation %.*s is never closed ('}')",
                            (int)k.name.len, k.name.p);
        int root;
        if ((st = instruction(c, idx, &root)) != COMMSCHED_OK)
            return st;
        if (root) {
            if (k.root != UINT32_MAX)
                return hlo_fail(c->err, COMMSCHED_EPARSE,
                                m->instrs[m->n_instrs - 1].name,
                                "a second ROOT in computation %.*s",
                                (int)k.name.len, k.name.p);
            k.root = (uint32_t)m->n_instrs - 1;
        }
    }
    k.n = (uint32_t)(m->n_instrs - k.first);
    if (k.n == 0)
        return hlo_fail(c->err, COMMSCHED_EPARSE, k.name,
                        "computation %.*s has no instructions",
                        (int)k.name.len, k.name.p);
    if (k.root == UINT32_MAX) /* the printer marks it; else the last */
        k.root = k.first + k.n - 1;
    if (grow((void **)&m->comps, &m->cap_comps, m->n_comps,
             sizeof *m->comps) != 0)
        return oom(c);
    m->comps[m->n_comps++] = k;
    return COMMSCHED_OK;
}

/* An integer attribute of the module header, 1 .. 2^24. */
static commsched_status header_count(cur *c, const hlo_attr *a, int64_t *out)
{
    int64_t v = 0;
    for (uint32_t i = 0; i < a->val.len; i++) {
        char ch = a->val.p[i];
        if (ch < '0' || ch > '9' || v > COMMSCHED_MAX_GROUP_SIZE) {
            v = -1;
            break;
        }
        v = v * 10 + (ch - '0');
    }
    if (v < 1 || v > COMMSCHED_MAX_GROUP_SIZE)
        return hlo_fail(c->err, COMMSCHED_EPARSE, a->val,
                        "%.*s must be an integer from 1 to %u, got \"%.*s\"",
                        (int)a->key.len, a->key.p, COMMSCHED_MAX_GROUP_SIZE,
                        (int)a->val.len, a->val.p);
    *out = v;
    return COMMSCHED_OK;
}

static commsched_status header(cur *c)
{
    hlo_module *m = c->m;
    commsched_status st;
    if ((st = skip_blank(c, 0)) != COMMSCHED_OK)
        return st;
    if ((st = name(c, &m->name, "the module's name")) != COMMSCHED_OK)
        return st;
    uint32_t first, n;
    size_t mark = m->n_attrs;
    if ((st = attrs(c, 1, &first, &n)) != COMMSCHED_OK)
        return st;
    for (uint32_t i = first; i < first + n; i++) {
        const hlo_attr *a = &m->attrs[i];
        if (hlo_span_eq(a->key, "is_scheduled"))
            m->scheduled = hlo_span_eq(a->val, "true");
        else if (hlo_span_eq(a->key, "num_partitions"))
            st = header_count(c, a, &m->partitions);
        else if (hlo_span_eq(a->key, "replica_count"))
            st = header_count(c, a, &m->replicas);
        if (st != COMMSCHED_OK)
            return st;
    }
    m->n_attrs = mark; /* the header's attributes are not an instruction's */
    if (peek(c) >= 0 && peek(c) != '\n')
        return expected(c, "',' or the end of the line");
    if (m->partitions * m->replicas > COMMSCHED_MAX_GROUP_SIZE)
        return fail_here(c, "%lld replicas x %lld partitions: more than %u "
                            "devices",
                         (long long)m->replicas, (long long)m->partitions,
                         COMMSCHED_MAX_GROUP_SIZE);
    return COMMSCHED_OK;
}

/* The debug-info tables newer printers put after the header (FileNames,
 * FunctionNames, FileLocations, StackFrames): their title line, then
 * lines that start with a number. */
static void skip_table(cur *c)
{
    for (;;) {
        while (peek(c) >= 0 && peek(c) != '\n')
            adv(c);
        adv(c);
        size_t at = c->i;
        int line = c->line, col = c->col;
        while (peek(c) == ' ' || peek(c) == '\t')
            adv(c);
        if (!(peek(c) >= '0' && peek(c) <= '9')) {
            c->i = at;
            c->line = line;
            c->col = col;
            return;
        }
    }
}

static uint64_t hash_bytes(const char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

#define HASH0 UINT64_C(14695981039346656037)

static size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < 2 * n)
        c *= 2;
    return c;
}

uint32_t hlo_comp_find(const hlo_module *m, const char *p, size_t len)
{
    if (len > 0 && p[0] == '%') {
        p++;
        len--;
    }
    if (!m->comp_index)
        return UINT32_MAX;
    size_t mask = m->comp_index_cap - 1;
    for (size_t h = (size_t)hash_bytes(p, len, HASH0) & mask;;
         h = (h + 1) & mask) {
        uint32_t k = m->comp_index[h];
        if (k == UINT32_MAX)
            return UINT32_MAX;
        if (m->comps[k].name.len == len &&
            memcmp(m->comps[k].name.p, p, len) == 0)
            return k;
    }
}

static uint64_t instr_hash(uint32_t comp, hlo_span s)
{
    return hash_bytes(s.p, s.len, HASH0 ^ ((uint64_t)comp * 0x9e3779b97f4a7c15u));
}

static uint32_t instr_find(const hlo_module *m, uint32_t comp, hlo_span s)
{
    size_t mask = m->instr_index_cap - 1;
    for (size_t h = (size_t)instr_hash(comp, s) & mask;; h = (h + 1) & mask) {
        uint32_t k = m->instr_index[h];
        if (k == UINT32_MAX)
            return UINT32_MAX;
        const hlo_instr *in = &m->instrs[k];
        if (in->comp == comp && in->name.len == s.len &&
            memcmp(in->name.p, s.p, s.len) == 0)
            return k;
    }
}

/* Indexes computations and instructions by name (duplicates are errors),
 * resolves operands (each must come earlier in its computation: the text
 * lists them in an order XLA can run) and finds the entry. */
static commsched_status resolve(cur *c)
{
    hlo_module *m = c->m;
    m->comp_index_cap = pow2_at_least(m->n_comps);
    m->instr_index_cap = pow2_at_least(m->n_instrs);
    m->comp_index = malloc(m->comp_index_cap * sizeof *m->comp_index);
    m->instr_index = malloc(m->instr_index_cap * sizeof *m->instr_index);
    if (!m->comp_index || !m->instr_index)
        return oom(c);
    memset(m->comp_index, 0xff, m->comp_index_cap * sizeof *m->comp_index);
    memset(m->instr_index, 0xff, m->instr_index_cap * sizeof *m->instr_index);
    m->entry = UINT32_MAX;
    for (uint32_t k = 0; k < m->n_comps; k++) {
        const hlo_comp *cp = &m->comps[k];
        uint32_t prev = hlo_comp_find(m, cp->name.p, cp->name.len);
        if (prev != UINT32_MAX)
            return hlo_fail(c->err, COMMSCHED_EPARSE, cp->name,
                            "a second computation named %.*s (the first at "
                            "line %d)",
                            (int)cp->name.len, cp->name.p,
                            m->comps[prev].name.line);
        size_t mask = m->comp_index_cap - 1;
        size_t h = (size_t)hash_bytes(cp->name.p, cp->name.len, HASH0) & mask;
        while (m->comp_index[h] != UINT32_MAX)
            h = (h + 1) & mask;
        m->comp_index[h] = k;
        if (cp->entry) {
            if (m->entry != UINT32_MAX)
                return hlo_fail(c->err, COMMSCHED_EPARSE, cp->name,
                                "a second ENTRY computation");
            m->entry = k;
        }
    }
    if (m->entry == UINT32_MAX) {
        hlo_span s = {c->s, 0, 1, 1};
        return hlo_fail(c->err, COMMSCHED_EPARSE, s,
                        "the module has no ENTRY computation");
    }
    for (uint32_t i = 0; i < m->n_instrs; i++) {
        const hlo_instr *in = &m->instrs[i];
        uint32_t prev = instr_find(m, in->comp, in->name);
        if (prev != UINT32_MAX)
            return hlo_fail(c->err, COMMSCHED_EPARSE, in->name,
                            "a second instruction named %.*s in the "
                            "computation (the first at line %d)",
                            (int)in->name.len, in->name.p,
                            m->instrs[prev].name.line);
        for (uint32_t j = 0; j < in->n_ops; j++) {
            hlo_operand *o = &m->operands[in->ops + j];
            o->instr = instr_find(m, in->comp, o->name);
            if (o->instr == UINT32_MAX)
                return hlo_fail(c->err, COMMSCHED_EPARSE, o->name,
                                "unknown operand %%%.*s (no instruction of "
                                "that name comes before it in computation "
                                "%.*s)",
                                (int)o->name.len, o->name.p,
                                (int)m->comps[in->comp].name.len,
                                m->comps[in->comp].name.p);
        }
        size_t mask = m->instr_index_cap - 1;
        size_t h = (size_t)instr_hash(in->comp, in->name) & mask;
        while (m->instr_index[h] != UINT32_MAX)
            h = (h + 1) & mask;
        m->instr_index[h] = i;
    }
    return COMMSCHED_OK;
}

commsched_status hlo_parse(const char *text, size_t len, hlo_module *m,
                           commsched_error *err)
{
    memset(m, 0, sizeof *m);
    m->text = text;
    m->len = len;
    m->partitions = m->replicas = 1;
    cur c = {text, len, 0, 1, 1, m, err};
    commsched_status st;
    int seen_header = 0;
    for (;;) {
        if ((st = skip_blank(&c, 1)) != COMMSCHED_OK)
            return st;
        if (peek(&c) < 0)
            break;
        hlo_span w = here(&c);
        while (is_name_char(peek(&c)))
            adv(&c);
        finish_span(&c, &w);
        if (!seen_header) {
            if (!hlo_span_eq(w, "HloModule")) {
                c.i = (size_t)(w.p - text);
                c.line = w.line;
                c.col = w.col;
                return expected(&c, "\"HloModule\" (an HLO text module, as "
                                    "XLA dumps with --xla_dump_hlo_as_text)");
            }
            seen_header = 1;
            if ((st = header(&c)) != COMMSCHED_OK)
                return st;
            continue;
        }
        if (hlo_span_eq(w, "FileNames") || hlo_span_eq(w, "FunctionNames") ||
            hlo_span_eq(w, "FileLocations") ||
            hlo_span_eq(w, "StackFrames")) {
            skip_table(&c);
            continue;
        }
        int entry = hlo_span_eq(w, "ENTRY");
        if (entry) {
            if ((st = skip_blank(&c, 0)) != COMMSCHED_OK)
                return st;
        } else {
            c.i = (size_t)(w.p - text);
            c.line = w.line;
            c.col = w.col;
        }
        if ((st = computation(&c, entry)) != COMMSCHED_OK)
            return st;
    }
    if (!seen_header)
        return expected(&c, "\"HloModule\" (an HLO text module, as XLA "
                            "dumps with --xla_dump_hlo_as_text)");
    return resolve(&c);
}

void hlo_module_free(hlo_module *m)
{
    free(m->shapes);
    free(m->dims);
    free(m->children);
    free(m->instrs);
    free(m->operands);
    free(m->attrs);
    free(m->comps);
    free(m->comp_index);
    free(m->instr_index);
    memset(m, 0, sizeof *m);
}

const hlo_attr *hlo_attr_find(const hlo_module *m, const hlo_instr *in,
                              const char *key)
{
    for (uint32_t i = 0; i < in->n_attrs; i++)
        if (hlo_span_eq(m->attrs[in->attrs + i].key, key))
            return &m->attrs[in->attrs + i];
    return NULL;
}

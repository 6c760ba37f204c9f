/* How an importer reports (import_internal.h): failures into the caller's
 * commsched_error as whole located messages, notes to the options'
 * callback, reading progress to theirs; the file readers; and the one
 * shape of a wait node. */
#include "import_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commsched/report.h"

const char *commsched_import_level_str(commsched_import_level level)
{
    return level == COMMSCHED_IMPORT_WARNING ? "warning" : "note";
}

void commsched_import_options_init(commsched_import_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->clock_ghz = 1.0;
    o->rank = -1;
    o->step = -1;
}

const commsched_import_options *import_opts(const commsched_import_options *o,
                                            commsched_import_options *def)
{
    if (o)
        return o;
    commsched_import_options_init(def);
    return def;
}

int import_code(commsched_status st)
{
    switch (st) {
    case COMMSCHED_OK:
        return IMPORT_OK;
    case COMMSCHED_EIO:
    case COMMSCHED_EPARSE:
    case COMMSCHED_ESCHEMA:
    case COMMSCHED_EGRAPH:
    case COMMSCHED_ECYCLE:
    case COMMSCHED_EORDER:
    case COMMSCHED_EINVAL:
        return IMPORT_INPUT;
    default:
        return IMPORT_RUNTIME;
    }
}

int import_fail(import_diag *d, commsched_status st, const char *fmt, ...)
{
    char text[COMMSCHED_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* "%s": the message may hold a '%' of its own (a name from the file). */
    commsched_error_set(d->err, st, NULL, "%s", text);
    return import_code(d->err->status);
}

int import_oom(import_diag *d)
{
    return import_fail(d, COMMSCHED_ENOMEM, "out of memory");
}

int import_report(import_diag *d, const char *file,
                  const commsched_error *inner)
{
    char buf[COMMSCHED_ERROR_TEXT_LENGTH];
    commsched_error_format(inner, file, buf, sizeof buf);
    return import_fail(d, inner->status, "%s", buf);
}

FILE *import_say_begin(import_say *s, const import_diag *d)
{
    s->text = NULL;
    s->len = 0;
    s->m = d->o && d->o->message ? open_memstream(&s->text, &s->len) : NULL;
    return s->m;
}

void import_say_end(import_say *s, const import_diag *d,
                    commsched_import_level level, const char *file)
{
    if (!s->m)
        return;
    int bad = fclose(s->m) != 0;
    s->m = NULL;
    if (!bad && s->text)
        d->o->message(d->o->message_arg, level, file, s->text);
    free(s->text);
    s->text = NULL;
}

void import_sayf(const import_diag *d, commsched_import_level level,
                 const char *file, const char *fmt, ...)
{
    import_say s;
    FILE *m = import_say_begin(&s, d);
    if (!m)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(m, fmt, ap);
    va_end(ap);
    import_say_end(&s, d, level, file);
}

const char *import_file_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

FILE *import_open_input(import_diag *d, const char *path)
{
    if (strcmp(path, "-") == 0)
        return stdin;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        f = NULL;
        errno = EISDIR; /* fopen opens a directory; reading it fails */
    }
    if (!f)
        import_fail(d, COMMSCHED_EIO, "%s: cannot open: %s", path,
                    strerror(errno));
    return f;
}

char *import_read_file(import_diag *d, const char *path, size_t *len)
{
    char *text;
    commsched_error e = {0};
    if (commsched_read_file(path, &text, len, &e) == COMMSCHED_OK)
        return text;
    if (e.status == COMMSCHED_ENOMEM)
        import_oom(d);
    else /* "-" never fails to open: the name is the path then */
        import_fail(d, e.status, "%s: %s", import_file_name(path), e.text);
    return NULL;
}

uint64_t import_file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
               ? (uint64_t)st.st_size
               : 0;
}

void import_progress(const import_diag *d, uint64_t done, uint64_t total)
{
    if (d->o && d->o->progress)
        d->o->progress(d->o->progress_arg, done, total);
}

const char *import_bytes(double bytes, char *buf, size_t size)
{
    return commsched_format_bytes(bytes, buf, size);
}

commsched_node_spec import_wait_spec(const char *name,
                                     const char *const *inputs,
                                     size_t n_inputs,
                                     const commsched_output_spec *outputs,
                                     size_t n_outputs)
{
    commsched_node_spec s = {0};
    s.name = name;
    s.kind = COMMSCHED_NODE_WAIT;
    s.op = "wait";
    s.inputs = inputs;
    s.n_inputs = n_inputs;
    s.outputs = outputs;
    s.n_outputs = n_outputs;
    s.runtime_ns = s.flops = s.bytes = -1;
    return s;
}

void import_add_wait(commsched_builder *b, const char *coll,
                     commsched_error *err)
{
    char wait[256]; /* the importers cut names well below this */
    size_t len = strnlen(coll, sizeof wait - sizeof ".wait");
    memcpy(wait, coll, len);
    memcpy(wait + len, ".wait", sizeof ".wait");
    const char *in[1] = {coll};
    commsched_output_spec o = {wait, 0, coll};
    commsched_node_spec s = import_wait_spec(wait, in, 1, &o, 1);
    (void)commsched_builder_add_node(b, &s, err); /* copies the names */
}

/* The public entry points of include/commsched/import.h: each runs one
 * importer with a diag of its own (the caller's error, or a local one
 * when the caller gave none, so the status is known either way). */
#include <stdlib.h>
#include <string.h>

#include "import_internal.h"
#include "kineto.h"

typedef int (*importer_fn)(import_diag *d, const char *path,
                           const commsched_import_options *o,
                           commsched_graph **out);

static commsched_status run(importer_fn fn, const char *path,
                            const commsched_import_options *opts,
                            commsched_graph **out, commsched_error *err)
{
    commsched_error local = {0};
    commsched_import_options def;
    import_diag d = {err ? err : &local, import_opts(opts, &def)};
    if (!out)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no graph out-parameter");
    *out = NULL;
    if (!path)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL, "no path");
    if (fn(&d, path, d.o, out) == 0)
        return COMMSCHED_OK;
    commsched_graph_destroy(*out);
    *out = NULL;
    /* Every failing step records why; a step that did not would still
     * fail here rather than pass for success. */
    if (d.err->status == COMMSCHED_OK)
        commsched_error_set(d.err, COMMSCHED_EINTERNAL, NULL,
                            "%s: import failed", import_file_name(path));
    return d.err->status;
}

commsched_status commsched_import_astra(const char *path,
                                        const commsched_import_options *o,
                                        commsched_graph **out,
                                        commsched_error *err)
{
    return run(import_astra, path, o, out, err);
}

commsched_status commsched_import_chakra(const char *path,
                                         const commsched_import_options *o,
                                         commsched_graph **out,
                                         commsched_error *err)
{
    return run(import_chakra, path, o, out, err);
}

commsched_status commsched_import_kineto(const char *path,
                                         const commsched_import_options *o,
                                         commsched_graph **out,
                                         commsched_error *err)
{
    return run(import_kineto, path, o, out, err);
}

commsched_status commsched_import_pytorch_et(
    const char *path, const commsched_import_options *o, commsched_graph **out,
    commsched_error *err)
{
    return run(import_pytorch_et, path, o, out, err);
}

commsched_status commsched_import_hlo(const char *path,
                                      const commsched_import_options *o,
                                      commsched_graph **out,
                                      commsched_error *err)
{
    return run(import_hlo, path, o, out, err);
}

commsched_status commsched_graph_load_any(const char *path, unsigned flags,
                                          const commsched_import_options *o,
                                          commsched_graph **out,
                                          commsched_format *format,
                                          commsched_error *err)
{
    if (format)
        *format = COMMSCHED_FORMAT_GRAPH;
    if (path && strcmp(path, "-") != 0 && commsched_import_is_chakra_et(path)) {
        if (format)
            *format = COMMSCHED_FORMAT_CHAKRA_ET;
        return commsched_import_chakra(path, o, out, err);
    }
    return commsched_graph_load_file(path, flags, out, err);
}

/* The Kineto trace object: a kineto (import_kineto.c) by another name. */
struct commsched_kineto {
    kineto *k;
};

commsched_status commsched_kineto_open(const char *path,
                                       const commsched_import_options *o,
                                       commsched_kineto **out,
                                       commsched_error *err)
{
    commsched_error local = {0};
    commsched_import_options def;
    import_diag d = {err ? err : &local, import_opts(o, &def)};
    if (!out || !path)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no path or out-parameter");
    *out = NULL;
    commsched_kineto *t = malloc(sizeof *t);
    if (!t)
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    if (kineto_load(&d, path, d.o, &t->k) != 0) {
        free(t);
        return d.err->status != COMMSCHED_OK ? d.err->status
                                             : COMMSCHED_EINTERNAL;
    }
    *out = t;
    return COMMSCHED_OK;
}

void commsched_kineto_destroy(commsched_kineto *k)
{
    if (!k)
        return;
    kineto_destroy(k->k);
    free(k);
}

const kineto *kineto_of_handle(const commsched_kineto *t)
{
    return t->k;
}

long commsched_kineto_device(const commsched_kineto *k)
{
    return kineto_device(k->k);
}

long commsched_kineto_rank(const commsched_kineto *k)
{
    return kineto_rank(k->k);
}

double commsched_kineto_overlap(const commsched_kineto *k, double *comm_us)
{
    double us = 0;
    double r = kineto_overlap(k->k, &us);
    if (comm_us)
        *comm_us = us;
    return r;
}

commsched_status commsched_kineto_graph(commsched_kineto *k,
                                        const commsched_import_options *o,
                                        commsched_graph **out,
                                        commsched_error *err)
{
    commsched_error local = {0};
    commsched_import_options def;
    import_diag d = {err ? err : &local, import_opts(o, &def)};
    if (!out)
        return commsched_error_set(err, COMMSCHED_EINVAL, NULL,
                                   "no graph out-parameter");
    *out = NULL;
    if (kineto_build(k->k, &d, d.o, out) == 0)
        return COMMSCHED_OK;
    commsched_graph_destroy(*out);
    *out = NULL;
    return d.err->status != COMMSCHED_OK ? d.err->status : COMMSCHED_EINTERNAL;
}

/* commsched — the collectives table's "limiting factor" in words
 * (docs/REPORTS.md, "What the page shows").
 *
 * Each pass records what stopped it in its own vocabulary: Inductor's
 * ReorderInfo / SinkWaitInfo texts for reorder_communication_preserving_
 * peak_memory and sink_waits_iterative, short tags for overlap
 * (docs/PASSES.md), and "None" when nothing stopped the pass. "None" in a
 * column headed "limiting factor" reads as an error, and "data dependency
 * detected\n candidate:mm2(outs:['h2'])" as a log line; a reader wants to
 * know what limited the collective. So the cell says it in words, and the
 * cell's title keeps each pass's own text for whoever compares with
 * Inductor. A text this code does not know (a file written by another
 * version) is shown as written, its first line. */
#include "report_html_internal.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

/* Writes s[0..n) escaped; names are cut at 200 bytes, between
 * characters. */
static void esc_n(cs_html_out *w, const char *s, size_t n)
{
    char buf[204];
    if (n > 200) {
        size_t cut = cs_utf8_cut(s, 200);
        memcpy(buf, s, cut);
        memcpy(buf + cut, "...", 4);
    } else {
        memcpy(buf, s, n);
        buf[n] = '\0';
    }
    cs_html_esc(w, buf);
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The node a seed text names after `key` ("candidate:" or "with
 * candidate:"), up to the end of its line and without RCPPM's
 * "(outs:[...])" suffix; 0 when there is none. */
static int named(const char *s, const char *key, const char **name,
                 size_t *len)
{
    const char *p = strstr(s, key);
    if (!p)
        return 0;
    p += strlen(key);
    size_t n = strcspn(p, "\n");
    const char *outs = strstr(p, "(outs:[");
    if (outs && outs < p + n)
        n = (size_t)(outs - p);
    *name = p;
    *len = n;
    return n > 0;
}

/* The words for one pass's factor. `hidden`: the collective (or, for a
 * wait, its stall) ended up fully hidden. */
void cs_html_limit_words(cs_html_out *w, const char *pass, const char *factor,
                         int hidden)
{
    const char *name;
    size_t len;
    long long now, base;
    char a[32], b[32];
    int sink = pass && strstr(pass, "sink") != NULL;
    int reorder = pass && strstr(pass, "reorder") != NULL;
    if (!factor || strcmp(factor, "None") == 0 || strcmp(factor, "none") == 0) {
        /* Nothing stopped the pass. */
        if (hidden)
            cs_html_put(w, "nothing: fully hidden behind compute");
        else if (sink)
            cs_html_put(w, "nothing: the wait reached the end of the order");
        else if (reorder)
            cs_html_put(w, "nothing: reached the start of the order");
        else
            cs_html_put(w, "nothing stopped the pass");
        return;
    }
    /* Inductor's texts (RCPPM and sink_waits_iterative). */
    if (starts(factor, "unexposed by runtime estimations")) {
        cs_html_put(w, "already hidden by the runtime estimate");
    } else if (starts(factor, "data dependency detected")) {
        cs_html_put(w, "data dependency");
        if (named(factor, "candidate:", &name, &len)) {
            cs_html_put(w, sink ? ": " : " on ");
            esc_n(w, name, len);
            if (sink)
                cs_html_put(w, " needs its result");
        }
    } else if (starts(factor, "collective ordering")) {
        cs_html_put(w, "keeps the collectives' order");
        if (named(factor, "with candidate:", &name, &len)) {
            cs_html_put(w, " (");
            esc_n(w, name, len);
            cs_html_put(w, ")");
        }
    } else if (sscanf(factor, "peak memory new:%lld vs base:%lld", &now,
                      &base) == 2) {
        cs_html_putf(w, "memory budget: the peak would reach %s (base %s)",
                     cs_fmt_bytes((double)now, a, sizeof a),
                     cs_fmt_bytes((double)base, b, sizeof b));
    } else if (starts(factor, "candidate has compute")) {
        cs_html_put(w, sink ? "sinking further would expose more comm"
                            : "moving earlier would expose more comm");
    } else if (starts(factor, "candidate is wait")) {
        cs_html_put(w, "sinking further would expose the next wait");
    } else if (starts(factor, "candidate contains_async_collective ")) {
        const char *p = factor + strlen("candidate contains_async_collective ");
        cs_html_put(w, "async collective ");
        esc_n(w, p, strcspn(p, "\n"));
        cs_html_put(w, " next (not swapped)");
    } else if (starts(factor, "candidate ") &&
               (name = strstr(factor, " is collective, group_runtime:"))) {
        cs_html_put(w, "would expose collective ");
        esc_n(w, factor + strlen("candidate "),
              (size_t)(name - factor) - strlen("candidate "));
    }
    /* overlap's tags (docs/PASSES.md, "Statistics"). */
    else if (strcmp(factor, "sync") == 0) {
        cs_html_put(w, "sync collective: blocks compute");
    } else if (strcmp(factor, "input order kept") == 0) {
        cs_html_put(w, "input order kept: no better order found");
    } else if (strcmp(factor, "memory budget") == 0) {
        cs_html_put(w, "memory budget: an earlier issue would exceed it");
    } else if (strcmp(factor, "in-flight limit") == 0) {
        cs_html_put(w, "in-flight bytes limit");
    } else if (strcmp(factor, "stream busy") == 0) {
        cs_html_put(w, "stream busy: queued behind other collectives");
    } else if (strcmp(factor, "data dependency") == 0) {
        cs_html_put(w, "data dependency: issued as soon as its inputs "
                       "existed");
    } else if (strcmp(factor, "no compute left") == 0) {
        cs_html_put(w, "no independent compute left to hide it");
    } else {
        cs_html_esc_first_line(w, factor);
    }
}

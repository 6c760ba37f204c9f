/* commsched — the one binary min-heap (heap.h). */
#include "heap.h"

#include <assert.h>
#include <stdlib.h>

#include "util.h"

int cs_heap_reserve(cs_heap *h, size_t cap)
{
    if (cap <= h->cap)
        return 0;
    return cs_grow((void **)&h->a, &h->cap, cap, sizeof *h->a);
}

int cs_heap_push(cs_heap *h, cs_heap_item x)
{
    if (h->n == h->cap &&
        cs_grow((void **)&h->a, &h->cap, h->n + 1, sizeof *h->a) != 0)
        return -1;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cs_heap_less(&x, &h->a[p]))
            break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = x;
    return 0;
}

/* Puts x into the hole at i, moving smaller children up. */
static void sift_down(cs_heap *h, size_t i, cs_heap_item x)
{
    size_t n = h->n;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const cs_heap_item *best = &x;
        if (l < n && cs_heap_less(&h->a[l], best)) {
            m = l;
            best = &h->a[l];
        }
        if (l + 1 < n && cs_heap_less(&h->a[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        h->a[i] = h->a[m];
        i = m;
    }
    h->a[i] = x;
}

cs_heap_item cs_heap_pop(cs_heap *h)
{
    assert(h->n > 0);
    cs_heap_item top = h->a[0];
    cs_heap_item last = h->a[--h->n];
    if (h->n > 0)
        sift_down(h, 0, last);
    return top;
}

void cs_heap_replace_top(cs_heap *h, cs_heap_item x)
{
    assert(h->n > 0);
    sift_down(h, 0, x);
}

void cs_heap_make(cs_heap *h)
{
    for (size_t i = h->n / 2; i-- > 0;)
        sift_down(h, i, h->a[i]);
}

void cs_heap_fini(cs_heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

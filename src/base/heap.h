/* commsched — the one binary min-heap: the heap scheduler, bucketing, the
 * overlap pass (its waits; its frame and collective sets, whose keys are
 * fixed ranks, are bit sets) and the simulator's memory-over-time sweep
 * order their ready sets with it. An item carries its own key, compared as (k1, k2,
 * k3) ascending, and a payload v; each user maps its order onto the key
 * (every user makes keys distinct, so the order items leave in depends on
 * the keys alone, never on the heap's shape). Not installed. */
#ifndef COMMSCHED_HEAP_H
#define COMMSCHED_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct cs_heap_item {
    uint64_t k1;
    double k2;
    uint64_t k3;
    uint32_t v;
} cs_heap_item;

typedef struct cs_heap {
    cs_heap_item *a;
    size_t n, cap;
} cs_heap;

static inline int cs_heap_less(const cs_heap_item *x, const cs_heap_item *y)
{
    if (x->k1 != y->k1)
        return x->k1 < y->k1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2;
    return x->k3 < y->k3;
}

/* Room for at least cap items, so that cs_heap_push cannot fail. Returns 0,
 * or -1 when allocation fails (the heap keeps its items). */
int cs_heap_reserve(cs_heap *h, size_t cap);
/* Adds x, growing as needed. Returns 0, or -1 when growing fails (x is not
 * added). */
int cs_heap_push(cs_heap *h, cs_heap_item x);
/* Removes and returns the least item. The heap must not be empty. */
cs_heap_item cs_heap_pop(cs_heap *h);
/* Replaces the least item by x (a pop and a push in one sift). The heap
 * must not be empty. */
void cs_heap_replace_top(cs_heap *h, cs_heap_item x);
/* Orders items a[0 .. n) written directly into the array. */
void cs_heap_make(cs_heap *h);
/* Frees the array; the heap is empty and reusable afterwards. */
void cs_heap_fini(cs_heap *h);

#endif /* COMMSCHED_HEAP_H */

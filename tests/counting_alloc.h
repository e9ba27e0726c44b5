/*
 * tests/counting_alloc.h - a counting fc_allocator that fails the Nth allocation (and, with
 * fail_after, every one after it), for the fault-injection loops of several tests. Blocks
 * carry their size, so a free with the wrong size is counted.
 */
#ifndef FUSEC_TESTS_COUNTING_ALLOC_H
#define FUSEC_TESTS_COUNTING_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct counting_alloc {
    long calls;          /* allocation attempts so far (malloc and realloc) */
    long fail_at;        /* the attempt to fail (1-based); 0: never */
    bool fail_after;     /* also fail every attempt after fail_at */
    bool injected;       /* a failure was injected in this run */
    long live;           /* blocks allocated and not yet freed */
    size_t live_bytes;
    long size_mismatches; /* free/realloc told a size other than the block's */
} counting_alloc;

/* Each block carries its size in front, so free_fn can check the size fusec passes. */
typedef union block_header {
    size_t size;
    max_align_t align;
} block_header;

static inline bool should_fail(counting_alloc *ca) {
    ca->calls++;
    if (ca->fail_at > 0 && (ca->calls == ca->fail_at || (ca->fail_after && ca->calls > ca->fail_at))) {
        ca->injected = true;
        return true;
    }
    return false;
}

static inline void *ca_malloc(void *user, size_t size) {
    counting_alloc *ca = user;
    if (should_fail(ca)) return NULL;
    block_header *h = malloc(sizeof *h + size);
    if (!h) return NULL;
    h->size = size;
    ca->live++;
    ca->live_bytes += size;
    return h + 1;
}

static inline void *ca_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    counting_alloc *ca = user;
    if (!ptr) return ca_malloc(user, new_size);
    block_header *h = (block_header *)ptr - 1;
    if (h->size != old_size) ca->size_mismatches++;
    if (should_fail(ca)) return NULL;
    size_t had = h->size;
    block_header *n = realloc(h, sizeof *n + new_size);
    if (!n) return NULL;
    n->size = new_size;
    ca->live_bytes = ca->live_bytes - had + new_size;
    return n + 1;
}

static inline void ca_free(void *user, void *ptr, size_t size) {
    counting_alloc *ca = user;
    if (!ptr) return;
    block_header *h = (block_header *)ptr - 1;
    if (h->size != size) ca->size_mismatches++;
    ca->live--;
    ca->live_bytes -= h->size;
    free(h);
}

#endif /* FUSEC_TESTS_COUNTING_ALLOC_H */

/* A PyTorch execution trace as `import kineto --et` reads it
 * (import_pytorch_et.c): operators found by record-function id, their
 * tensors as [storage, bytes]. */
#ifndef COMMSCHED_PYTORCH_ET_H
#define COMMSCHED_PYTORCH_ET_H

#include <stddef.h>
#include <stdint.h>

#include "import_internal.h"

typedef struct et pytorch_et;

typedef struct et_tensor {
    int64_t id, storage, offset, bytes;
    int cuda;
    int out; /* a collective's output passed as an argument */
} et_tensor;

/* Reads ET.json[.gz]. Records located errors in d, which the trace
 * keeps for pytorch_et_tensors' (so d must outlive it); returns 0 with
 * *out (pytorch_et_destroy it) or the code. */
int pytorch_et_load(import_diag *d, const char *path, uint64_t max_memory,
                    pytorch_et **out);
void pytorch_et_destroy(pytorch_et *e);

/* The node whose rf_id is rf; SIZE_MAX when none. */
size_t pytorch_et_find_rf(const pytorch_et *e, int64_t rf);

/* Node i's input (outputs 0) or output (outputs 1) tensors into *ts
 * (grown as needed, *n of them). Returns 0 or the code after
 * recording a located error. */
int pytorch_et_tensors(pytorch_et *e, size_t i, int outputs, et_tensor **ts,
                       size_t *n, size_t *cap);

#endif /* COMMSCHED_PYTORCH_ET_H */

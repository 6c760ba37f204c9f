/* commsched fuzz harnesses (issue 21) — shared declarations.
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput. Built with clang's
 * -fsanitize=fuzzer (`make fuzz`) it is a libFuzzer binary; built with
 * replay_main.c it runs saved inputs under the normal build, so every
 * crash the fuzzers ever found stays a test (`ctest -L fuzz`).
 *
 * A harness aborts (a finding) when the library breaks a promise: a crash,
 * a sanitizer report, a failure without a located error, an internal
 * invariant error, a saved graph that does not load back the same. */
#ifndef COMMSCHED_FUZZ_H
#define COMMSCHED_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "commsched/commsched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints why and aborts: libFuzzer and the replay test both catch it. */
#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* A NUL-terminated copy of the input (malloc'ed), or NULL on OOM. */
char *fuzz_text(const uint8_t *data, size_t size);

/* A failure must say what and where: a status, a message, and a location
 * (line:column or a path) unless it is one of the unlocated kinds. */
void fuzz_check_error(commsched_status st, const commsched_error *err);

/* Saves g (order may be NULL) to a malloc'ed string; aborts when saving a
 * graph the library accepted fails. */
char *fuzz_save(const commsched_graph *g, const uint32_t *order);

/* save -> load -> save gives the same bytes, and the reloaded graph equals
 * g when order is NULL. */
void fuzz_check_roundtrip(const commsched_graph *g, const uint32_t *order);

#endif

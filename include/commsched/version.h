/* commsched — version of the headers a program was compiled against, and of
 * the library it runs with.
 *
 * The macros come from the generated commsched/config.h (installed beside
 * this header) and describe the headers; commsched_version() and
 * commsched_version_number() describe the library actually loaded. The
 * shared library's soname carries the major version (libcommsched.so.0):
 * programs built against one major version run with any library of that
 * major version whose minor version is at least theirs. A program can
 * check this at start-up:
 *
 *     if (commsched_version_number() / 10000 != COMMSCHED_VERSION_MAJOR ||
 *         commsched_version_number() < COMMSCHED_VERSION_NUMBER)
 *         ... refuse to run ...
 */
#ifndef COMMSCHED_VERSION_H
#define COMMSCHED_VERSION_H

#include "commsched/config.h"
#include "commsched/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MAJOR * 10000 + MINOR * 100 + PATCH of the headers (0.1.0 gives 100). */
#define COMMSCHED_VERSION_NUMBER                                               \
    (COMMSCHED_VERSION_MAJOR * 10000 + COMMSCHED_VERSION_MINOR * 100 +         \
     COMMSCHED_VERSION_PATCH)

/* The loaded library's version as "MAJOR.MINOR.PATCH". A static string:
 * never NULL, never freed, safe from any thread. */
COMMSCHED_EXPORT const char *commsched_version(void);

/* The loaded library's version as MAJOR * 10000 + MINOR * 100 + PATCH. */
COMMSCHED_EXPORT unsigned commsched_version_number(void);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_VERSION_H */

/* commsched — the library's own version (commsched/version.h). The values
 * are compiled in from the generated config.h, so they describe this
 * library, whatever headers the caller was built with. */
#include "commsched/version.h"

const char *commsched_version(void) { return COMMSCHED_VERSION_STRING; }

unsigned commsched_version_number(void)
{
    return (unsigned)COMMSCHED_VERSION_NUMBER;
}

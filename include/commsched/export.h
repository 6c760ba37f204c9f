/* commsched — symbol visibility. The library is built with hidden visibility;
 * only declarations marked COMMSCHED_EXPORT are part of the ABI. */
#ifndef COMMSCHED_EXPORT_H
#define COMMSCHED_EXPORT_H

#if defined(COMMSCHED_STATIC_DEFINE)
#define COMMSCHED_EXPORT
#elif defined(_WIN32)
#ifdef COMMSCHED_BUILDING
#define COMMSCHED_EXPORT __declspec(dllexport)
#else
#define COMMSCHED_EXPORT __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define COMMSCHED_EXPORT __attribute__((visibility("default")))
#else
#define COMMSCHED_EXPORT
#endif

#endif /* COMMSCHED_EXPORT_H */

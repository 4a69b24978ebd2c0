// CFuse: libfuse 3 for Swift.
// FUSE_USE_VERSION must be defined before fuse headers are included, and a system-library
// target cannot pass defines any other way (see PLATFORM-NOTES.md). Do not define
// _FILE_OFFSET_BITS here: off_t is already 64-bit and the define breaks module builds.
#ifndef DOTSAFE_CFUSE_SHIM_H
#define DOTSAFE_CFUSE_SHIM_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>

// Swift does not import these macros from <sys/stat.h>; utimensat/FUSE use them as sentinels in
// tv_nsec. Without them `touch` would set 1970.
static const long dotsafe_utime_now = ((1l << 30) - 1l);
static const long dotsafe_utime_omit = ((1l << 30) - 2l);

#endif

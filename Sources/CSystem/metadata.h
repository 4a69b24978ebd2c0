// CSystem, metadata part: statx(2) and O_NOATIME, both hidden behind _GNU_SOURCE in Swift's
// Glibc module. Kept apart from shim.h so that the storage's metadata calls stay in one place.
#ifndef DOTSAFE_CSYSTEM_METADATA_H
#define DOTSAFE_CSYSTEM_METADATA_H

#include <linux/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

// O_NOATIME is 01000000 on every Linux architecture Swift supports (x86_64, aarch64).
#define DOTSAFE_O_NOATIME 01000000

/// statx(2) of `name` relative to `folder`; -1 with errno on failure.
static inline int dotsafe_statx(int folder, const char *name, int flags, unsigned int mask, struct statx *result) {
    return (int)syscall(SYS_statx, folder, name, flags, mask, result);
}

/// The file system type (statfs f_type) of the file system holding `fd`; -1 with errno on failure.
static inline long dotsafe_file_system_type(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    return (long)info.f_type;
}

#endif

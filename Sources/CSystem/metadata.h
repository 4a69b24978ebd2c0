// CSystem, metadata part: statx(2) and O_NOATIME, both hidden behind _GNU_SOURCE in Swift's
// Glibc module. Kept apart from shim.h so that the storage's metadata calls stay in one place.
#ifndef DOTSAFE_CSYSTEM_METADATA_H
#define DOTSAFE_CSYSTEM_METADATA_H

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/stat.h>
#include <sys/ioctl.h>
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

/// How many extents the file system maps the file open at `fd` to (FIEMAP with room for none:
/// the kernel only counts them; with room for n it stops at n); -1 with errno (EOPNOTSUPP where
/// it keeps no such map, as tmpfs).
static inline long dotsafe_extent_count(int fd) {
    struct fiemap map = {0};
    map.fm_length = FIEMAP_MAX_OFFSET;
    if (ioctl(fd, FS_IOC_FIEMAP, &map) != 0) return -1;
    return (long)map.fm_mapped_extents;
}

/// `dotsafe_extent_count`, and where the first extent starts on the device in bytes (`*first`,
/// -1 for a file with no blocks): a second FIEMAP, with room for that one.
static inline long dotsafe_extent_map(int fd, long long *first) {
    long count = dotsafe_extent_count(fd);
    if (count < 0) return -1;
    _Alignas(struct fiemap) char buffer[sizeof(struct fiemap) + sizeof(struct fiemap_extent)] = {0};
    struct fiemap *map = (struct fiemap *)buffer;
    map->fm_length = FIEMAP_MAX_OFFSET;
    map->fm_extent_count = 1;
    if (ioctl(fd, FS_IOC_FIEMAP, map) != 0) return -1;
    *first = map->fm_mapped_extents > 0 ? (long long)map->fm_extents[0].fe_physical : -1;
    return count;
}

// renameat2(2) flags (linux/fs.h), AT_EMPTY_PATH and F_SETLEASE (F_LINUX_SPECIFIC_BASE + 0), behind _GNU_SOURCE.
#define DOTSAFE_RENAME_NOREPLACE 1
#define DOTSAFE_RENAME_EXCHANGE 2
#define DOTSAFE_AT_EMPTY_PATH 0x1000
#define DOTSAFE_F_SETLEASE 1024

/// renameat2(2) within one folder; -1 with errno on failure (EINVAL where the file system has
/// no such flag).
static inline int dotsafe_rename_in(int folder, const char *from, const char *to, unsigned int flags) {
    return (int)syscall(SYS_renameat2, folder, from, folder, to, flags);
}

/// 1 when no other open file description of `fd`'s file exists, in any process: a write lease
/// is granted only then (fcntl F_SETLEASE), and is given back at once. 0 when it is not
/// granted, or where leases are not available (then nobody can be sure).
static inline int dotsafe_is_only_open(int fd) {
    if (fcntl(fd, DOTSAFE_F_SETLEASE, F_WRLCK) != 0) return 0;
    fcntl(fd, DOTSAFE_F_SETLEASE, F_UNLCK);
    return 1;
}

#endif

// CSystem: the few Linux calls DotSafe needs that Swift's Glibc module hides (they sit behind
// _GNU_SOURCE, which must not be defined for the whole module, or are variadic: see
// PLATFORM-NOTES.md). Each is a one-line wrapper; the logic stays in Swift (SystemCalls,
// VaultStore/Syscalls.swift, VaultCrypto/ProcessHygiene.swift).
#ifndef DOTSAFE_CSYSTEM_SHIM_H
#define DOTSAFE_CSYSTEM_SHIM_H

#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <spawn.h>

// O_TMPFILE is (__O_TMPFILE | O_DIRECTORY); __O_TMPFILE is 020000000 on every Linux
// architecture Swift supports (x86_64, aarch64).
#define DOTSAFE_O_TMPFILE_BITS 020000000

// O_DIRECT differs by architecture and hides behind _GNU_SOURCE.
#if defined(__x86_64__)
#define DOTSAFE_O_DIRECT 040000
#elif defined(__aarch64__)
#define DOTSAFE_O_DIRECT 0200000
#endif

/// open(2)'s O_DIRECT flag on this architecture: reads that skip the kernel's page cache.
static inline int dotsafe_o_direct(void) { return DOTSAFE_O_DIRECT; }

/// A descriptor that only names `folder` (O_PATH), for reaching a file in it by
/// /proc/self/fd/N/NAME where its whole path is too long; -1 with errno on failure.
static inline int dotsafe_open_folder_path(const char *folder) {
    return open(folder, 010000000 /* O_PATH on every Linux */ | O_DIRECTORY | O_CLOEXEC);
}

/// An unnamed regular file in `folder` (O_TMPFILE), mode 0600; -1 with errno on failure.
static inline int dotsafe_open_unnamed(int folder) {
    return openat(folder, ".", DOTSAFE_O_TMPFILE_BITS | O_DIRECTORY | O_WRONLY | O_CLOEXEC, 0600);
}

/// The same, opened with O_DIRECT: its writes skip the kernel's page cache.
static inline int dotsafe_open_unnamed_direct(int folder) {
    return openat(folder, ".", DOTSAFE_O_TMPFILE_BITS | DOTSAFE_O_DIRECT | O_DIRECTORY | O_WRONLY | O_CLOEXEC, 0600);
}

/// fallocate(2), mode 0, of the first `length` bytes (behind _GNU_SOURCE); -1 with errno
/// (EOPNOTSUPP where the file system has none).
static inline int dotsafe_allocate(int fd, long long length) { return (int)syscall(SYS_fallocate, fd, 0, 0LL, length); }

/// accept4(2) with SOCK_CLOEXEC (accept4 hides behind _GNU_SOURCE); -1 with errno on failure.
static inline int dotsafe_accept_cloexec(int fd) { return (int)syscall(SYS_accept4, fd, NULL, NULL, SOCK_CLOEXEC); }

/// A pipe whose two ends close at exec, made atomically (a child spawned by another thread at the
/// same moment must not inherit an end); pipe2 is behind _GNU_SOURCE.
static inline int dotsafe_pipe_cloexec(int ends[2]) { return (int)syscall(SYS_pipe2, ends, O_CLOEXEC); }

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34, behind _GNU_SOURCE): the child closes
/// every descriptor from `from` on.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int dotsafe_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

/// syncfs(2): makes every write of the file system holding `fd` durable.
static inline int dotsafe_syncfs(int fd) { return (int)syscall(SYS_syncfs, fd); }

/// The pid and uid of the process at the other end of a Unix socket (SO_PEERCRED, whose
/// struct ucred hides behind _GNU_SOURCE); -1 with errno on failure.
static inline int dotsafe_peer_credentials(int fd, pid_t *pid, uid_t *uid) {
    struct { pid_t pid; uid_t uid; gid_t gid; } credentials;
    socklen_t size = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}

// prctl(2) is variadic, so Swift cannot call it: these wrap the two uses DotSafe has.
// Returns 0 on success, -1 with errno set.
static inline int dotsafe_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
static inline int dotsafe_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

/// mallopt(M_ARENA_MAX, n): <malloc.h> is not in Swift's Glibc module. Returns 1 on success.
static inline int dotsafe_limit_malloc_arenas(int count) { return mallopt(M_ARENA_MAX, count); }
/// memfd_create(name, MFD_CLOEXEC): a file in memory, never on a disk (memfd_create hides
/// behind _GNU_SOURCE). -1 with errno on failure.
static inline int dotsafe_memory_file(const char *name) { return (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */); }
/// malloc_trim(0): gives the pages of freed heap memory back to the system. Returns 1 if any went.
static inline int dotsafe_trim_malloc(void) { return malloc_trim(0); }

#endif

import CSystem
import Glibc

/// Process-wide protections for a daemon that holds keys for hours.
public enum ProcessHygiene {
    /// Makes the process non-dumpable: no core file, and other processes of the same user can no
    /// longer `ptrace` it or read its `/proc/<pid>/mem`. `MADV_DONTDUMP` covers only key pages;
    /// this covers plaintext in caches and buffers too. Call it first thing in the mount command.
    /// prctl(PR_SET_DUMPABLE, 0) via the shim's dotsafe_set_not_dumpable(); throws on failure.
    public static func disableCoreDumps() throws {
        guard dotsafe_set_not_dumpable() == 0 else {
            throw CryptoError.library("prctl(PR_SET_DUMPABLE): errno \(errno)")
        }
    }

    /// Whether the kernel would still write a core dump of this process (`PR_GET_DUMPABLE` != 0).
    public static var isDumpable: Bool {
        dotsafe_is_dumpable() != 0
    }
}

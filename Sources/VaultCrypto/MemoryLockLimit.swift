import Glibc

/// How much more memory this process may lock with `mlock`: RLIMIT_MEMLOCK (8 MiB by default
/// for a user) less what it has locked already (`VmLck`). A thread with CAP_IPC_LOCK (root,
/// usually) is not held to the limit.
public enum MemoryLockLimit {
    /// Bytes that can still be locked; nil when there is no limit.
    public static func remaining() -> Int? {
        if hasLockCapability { return nil }
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur == rlim_t.max /* RLIM_INFINITY */ { return nil }
        let locked = statusField("VmLck:").map { $0 * 1024 } ?? 0
        return max(0, Int(clamping: limit.rlim_cur) - locked)
    }

    /// The process's RLIMIT_MEMLOCK in bytes; nil when unlimited (for messages).
    public static var limit: Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max /* RLIM_INFINITY */ else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// CAP_IPC_LOCK (capability 14) in the effective set, from `CapEff`. Capabilities belong to
    /// a thread (a test that drops them with setuid does so in one thread only), so this reads
    /// the calling thread's status.
    static var hasLockCapability: Bool {
        guard let line = statusLine("CapEff:"), let mask = UInt64(line, radix: 16) else { return false }
        return mask & (1 << 14) != 0
    }

    /// A `kB` figure of the calling thread's status (`VmLck` is the whole process's).
    private static func statusField(_ name: String) -> Int? {
        statusLine(name).flatMap { Int($0.split(separator: " ").first ?? "") }
    }

    /// The value after `name` on its line of /proc/thread-self/status, trimmed.
    private static func statusLine(_ name: String) -> String? {
        let fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            data += buffer[..<got]
        }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name) {
            return line.dropFirst(name.count).trimmingCharacters()
        }
        return nil
    }
}

private extension Substring {
    func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

import Glibc
import Synchronization
import SystemCalls
import VaultFileSystem

/// What the mount daemon tells the system log (R-INT-3): warnings and failures, each with the
/// mount point and nothing else about the vault. Never a name from inside the vault, a file
/// count, a size or the storage path, and no line for an ordinary mount or lock: a log of
/// sessions would tell the copier and other local users when vaults are used (R-DEN).
///
/// A syslog datagram (`<PRIORITY>dotsafe[PID]: MESSAGE`, facility user) to /dev/log, which
/// journald and rsyslog both read; `DOTSAFE_LOG_SOCKET` names another socket (the tests' own).
/// A message is not written through syslog(3) so that its socket can be chosen.
final class SystemLog: Sendable {
    enum Severity: Int { case error = 3, warning = 4 }

    static let socketVariable = "DOTSAFE_LOG_SOCKET"

    private let socket: String
    private let mountPoint: String
    /// Whether the last commit failed: a failure is logged once, and again only after a commit
    /// succeeded (the scheduler retries every few seconds; the log should not fill up).
    private let failing = Mutex(false)

    init(environment: [String: String], mountPoint: String) {
        socket = environment[Self.socketVariable].flatMap { $0.isEmpty ? nil : $0 } ?? "/dev/log"
        self.mountPoint = mountPoint
    }

    func write(_ severity: Severity, _ message: String) {
        let line = "<\(8 + severity.rawValue)>dotsafe[\(SystemCall.processID)]: \(mountPoint): \(message)"
        // No system log (a container without one): nothing else to tell.
        try? Datagram.send(Array(line.utf8), to: socket)
    }

    /// The outcome of a commit. Only the errno is told: an error's text may hold a path.
    func commitEnded(_ error: FSError?) {
        let wasFailing = failing.withLock { failing in
            defer { failing = error != nil }
            return failing
        }
        switch (error, wasFailing) {
        case (nil, true):
            write(.warning, "changes are written again")
        case (let error?, false) where error.errno == ENOSPC:
            write(.error, "the disk that holds the storage is full: changes stay in memory and are retried")
        case (let error?, false):
            write(.error, "writing changes failed (\(Self.errnoName(error.errno))): they stay in memory and are retried")
        default:
            break
        }
    }

    /// Format 2's rollback warning (docs/FORMAT.md §13.9): a root the vault committed is not in
    /// its slot, so it opened an older slot or a copy. Without the generations the warning on
    /// standard error names: they would count the vault's commits.
    func rootFallback() {
        write(.warning, "an index slot is missing, damaged or older than the vault's last commit: "
              + "the newest root found was opened ('dotsafe fsck' says more)")
    }

    /// Locking could not write the last changes.
    func lockFailed(_ error: FSError?) {
        write(.error, "locking failed: the last changes may not be written" + (error.map { " (\(Self.errnoName($0.errno)))" } ?? ""))
    }

    static func errnoName(_ code: Int32) -> String { String(cString: strerror(code)) }
}

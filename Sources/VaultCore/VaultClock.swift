import Glibc
import Synchronization

/// Where the vault reads the time: item times and the cover-refresh interval. Tests hold it still
/// or move it by hand.
public protocol VaultClock: Sendable {
    /// Nanoseconds since the Unix epoch.
    func now() -> Int64
}

public struct SystemClock: VaultClock {
    public init() {}
    public func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

/// A clock that moves only when told to.
public final class ManualClock: VaultClock {
    private let time: Mutex<Int64>
    public init(_ start: Int64 = 1_700_000_000_000_000_000) { time = Mutex(start) }
    public func now() -> Int64 { time.withLock { $0 } }
    public func advance(seconds: Double) { time.withLock { $0 += Int64(seconds * 1e9) } }
}

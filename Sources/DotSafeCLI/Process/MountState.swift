/// What a running daemon says of its mount when `dotsafe status` asks (one JSON line on the lock
/// channel): changes not yet written, and the idle timer.
struct MountState: Codable, Equatable {
    /// Changes in memory that no commit has written yet.
    var pending: Bool
    /// Seconds until the idle timer locks the vault (at the earliest: use restarts it); nil
    /// without `--idle`.
    var idleLockIn: Double?
    /// The `--idle` time, in seconds.
    var idleAfter: Double?
    /// `mount --sync`: the last sync's time or the failure since ("off" without it). Optional:
    /// a daemon of an earlier build does not say.
    var sync: String?
}

import Foundation
import VaultCore

/// What a running daemon says of its mount when `dotsafe status` asks (one JSON line on the lock
/// channel): changes not yet written, the idle timer, the sync. Made without waiting for the
/// vault's lock, which a commit holds for as long as it takes (a sync's merge: seconds on a
/// big vault): status answers then too.
struct MountState: Codable, Equatable {
    /// Changes in memory that no commit has written yet; nil when a commit held the vault
    /// through `pendingWaitSeconds` (unknown then: that commit is writing them).
    var pending: Bool?
    /// Seconds until the idle timer locks the vault (at the earliest: use restarts it); nil
    /// without `--idle`.
    var idleLockIn: Double?
    /// The `--idle` time, in seconds.
    var idleAfter: Double?
    /// `mount --sync`: the round running now, or the last sync's time or the failure since
    /// ("off" without it). Optional: a daemon of an earlier build does not say.
    var sync: String?

    /// How long status waits for the vault's lock: each request holds it for a moment, and a
    /// commit of a few changes (its fsyncs) for a fraction of a second, which this rides out; a
    /// merge's commit for seconds, which status does not wait for (its client waits 2 s at most,
    /// `MountRecord.answerSeconds`).
    static let pendingWaitSeconds = 0.5

    /// `vault.hasUncommittedChanges`, or nil once the lock has stayed held `pendingWaitSeconds`.
    static func pending(_ vault: Vault) -> Bool? {
        let end = ProcessInfo.processInfo.systemUptime + pendingWaitSeconds
        while true {
            if let pending = vault.hasUncommittedChangesIfFree { return pending }
            if ProcessInfo.processInfo.systemUptime >= end { return nil }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}

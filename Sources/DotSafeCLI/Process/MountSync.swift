import Dispatch
import Foundation
import Synchronization
import SystemCalls
import VaultCore
import VaultFileSystem
import VaultFUSE
import VaultSync

/// `mount --sync REMOTE` (docs/SYNC-DESIGN.md §3.6): the daemon's rounds of `MountedSynchronizer`.
/// The first runs before the mount is reported ready, so that the mount shows the vault as the
/// remote has it (and a new device joins before anything is written here); then a round runs
/// `commitDelay` seconds after a commit and every `interval`, one at a time; and a last one
/// when the mount goes, waited for at most `lockBound` seconds; past that the round's rclone is
/// ended, so that none outlives the daemon (`abandonRounds`). A round that fails changes
/// nothing that was committed here: the next one sends what is missing. A failure is logged
/// once per run of failures (mount point only); `dotsafe status` shows the last outcome.
final class MountSync: Sendable {
    /// Seconds from a commit to the round that sends it (more commits meanwhile ride along).
    static let commitDelay = 2.0
    /// The longest a lock waits for its last round (README, `mount --help`).
    static let lockBound = 15.0
    /// Past the bound: how long the round's rclone has to end after SIGTERM before SIGKILL (as
    /// at rclone's own stops), and then the round to wind down before the lock goes on without it.
    static let stopGrace = Double(ChildProcess.stopGraceSeconds)
    /// Tests only: seconds a merge's commit waits under the vault's lock.
    static let mergeDelayVariable = "DOTSAFE_TEST_MERGE_SECONDS"
    static let mergingThreadName = "merging"

    let remoteName: String
    private let synchronizer: MountedSynchronizer
    private let interval: Double
    private let log: SystemLog
    private let rounds = Mutex(())
    private let state = Mutex(State())
    /// The rounds' commits under way (`committing`), which no signal ends: a lock waits for them.
    private let commits = DispatchGroup()

    private struct State {
        /// When the round running now began (`dotsafe status` says so); nil between rounds.
        var roundStarted: Date?
        var lastSuccess: Date?
        var lastFailure: (time: Date, message: String)?
        var failing = false
        /// When a commit wants a round (uptime seconds), and when the interval's is due.
        var commitRoundAt: Double?
        var nextRoundAt = 0.0
        var stopped = false
        /// The last round, at lock, failed.
        var lastRoundFailed = false
        /// The lock gave up on the rounds: none starts any more, nor a round's commit.
        var abandoned = false
    }

    init(remote: String, configFile: String?, device: String, interval: Double, replacesPartialJoin: Bool = false, vault: Vault, storage: String,
         environment: [String: String], log: SystemLog) throws {
        let location: RemoteLocation, rclone: Rclone
        do {
            location = try RemoteLocation(remote)
            rclone = try Rclone(environment: environment, configFile: configFile)
        } catch { throw CLIError.failure(error.description) }
        remoteName = location.description
        var synchronizer = MountedSynchronizer(vault: vault, remote: RemoteStorage(location, rclone: rclone), storageFolder: storage,
                                               deviceName: device)
        synchronizer.replacesPartialJoin = replacesPartialJoin
        // For tests only (SyncMountCommitLockTests): a merge's commit made that many seconds
        // slower, its thread named meanwhile, for the test to see in /proc.
        if let seconds = environment[Self.mergeDelayVariable].flatMap(Double.init) {
            synchronizer.whileMerging = {
                let name = Thread.current.name
                defer { Thread.current.name = name }
                Thread.current.name = Self.mergingThreadName
                Thread.sleep(forTimeInterval: seconds)
            }
        }
        self.synchronizer = synchronizer
        self.interval = interval
        self.log = log
    }

    /// The round before the mount is ready. Throws for a remote rclone cannot use (a mistyped
    /// REMOTE, no rclone), for a storage that holds the vault under another pattern and for one
    /// that holds no copy of it yet: the mount is refused, nothing written; any other failure
    /// is returned as a warning
    /// for standard error, and the mount goes on with the vault as it is here. So are the
    /// round's own warnings (a merge without a common state), which every round also logs: the
    /// user who mounts sees them where they look. `filesMoved` hears its batches of files move
    /// (the terminal of `mount` shows them).
    func first(filesMoved: ((SyncProgress) -> Void)? = nil) throws -> [String] {
        let outcome = round(fileSystem: nil, mount: nil, filesMoved: filesMoved)
        guard let failure = outcome.failure else { return outcome.warnings }
        return [try warning(failing: failure)]
    }

    /// (A failure after a join replaced files is told with them, `FailedAfterJoinReplaced`.)
    private func warning(failing failure: any Error) throws -> String {
        switch (failure as? FailedAfterJoinReplaced)?.failure ?? failure {
        case RemoteError.unparseable, RemoteError.rcloneMissing: throw CLIError.failure(Self.describe(failure))
        case SyncRefusal.patternChanged:
            // No later round can send what this storage holds: the remote is at the new pattern.
            return "the first sync failed (\(Self.describe(failure))): the vault is mounted as it is here, and no sync of this "
                + "mount sends its changes; lock it, then mount it with the new pattern and --sync: this storage follows the change"
        case SyncRefusal.heldUnderOtherPattern:
            // This pattern opens nothing here: a new, empty vault mounted would take writes that
            // no round can sync (each is refused so), beside the vault's files under the other pattern.
            throw CLIError.failure("the first sync failed, so nothing was mounted: \(Self.describe(failure))")
        case SyncRefusal.rolledBack, SyncRefusal.otherRemote:
            // Every later round is refused the same way until the remote holds this device's state.
            return "the first sync failed (\(Self.describe(failure))): the vault is mounted as it is here, and its changes are kept "
                + "here; no sync of this mount sends them while the remote holds less than this device synced with"
        default:
            // A storage with no copy of the vault yet (a new device's): an empty vault mounted
            // would be one made apart, whose writes no round could merge with the remote's.
            if synchronizer.vault.isNew {
                throw CLIError.failure("the first sync failed, so nothing was mounted: \(Self.describe(failure)); this storage "
                    + "holds no copy of the vault yet: mount again when the remote can be reached")
            }
            return "the first sync failed (\(Self.describe(failure))): the vault is mounted as it is here, "
                + "and its changes are kept and sent when a sync succeeds (every \(Int(interval)) s)"
        }
    }

    /// Starts the rounds after commits and every interval while `mount` serves.
    func start(mount: FUSEMount, fileSystem: FileSystem) {
        state.withLock { $0.nextRoundAt = Self.uptime + interval }
        Thread.detachNewThread { [self] in
            while mount.isServing {
                Thread.sleep(forTimeInterval: 0.2)
                let due = state.withLock { state in
                    let now = Self.uptime
                    return !state.stopped && (state.commitRoundAt.map { now >= $0 } ?? false || now >= state.nextRoundAt)
                }
                if due { round(fileSystem: fileSystem, mount: mount) }
            }
        }
    }

    /// A commit succeeded: a round follows shortly.
    func committed() {
        state.withLock { state in
            if state.commitRoundAt == nil { state.commitRoundAt = Self.uptime + Self.commitDelay }
        }
    }

    /// The mount is gone, the vault still open: one last round, waited for at most `lockBound`.
    /// Past that, the round (the last or one still running before it) is stopped, or its commit
    /// under way waited for, and the lock goes on; each way one line in the system log says which.
    func last() {
        state.withLock { $0.stopped = true }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            let failed = round(fileSystem: nil, mount: nil, logging: false).failure != nil
            state.withLock { $0.lastRoundFailed = failed }
            done.signal()
        }
        let bound = Int(Self.lockBound)
        if done.wait(timeout: .now() + Self.lockBound) == .success {
            if state.withLock({ $0.lastRoundFailed }) {
                log.write(.warning, "locked without the last sync (it failed): changes are sent at the next sync")
            }
        } else if abandonRounds(until: done) {
            log.write(.warning, "locked without the last sync (a sync's commit under way at \(bound) s was waited for; what it "
                      + "merged is kept here): changes are sent at the next sync")
        } else {
            log.write(.warning, "locked without the last sync (no answer within \(bound) s): changes are sent at the next sync")
        }
    }

    /// The bound has passed with a round hung in rclone (a remote that takes its bytes slowly
    /// or answers nothing, which rclone's own timeouts would end minutes after the daemon; it
    /// would go on writing to the remote, or into the storage's download folder, with the vault
    /// locked). No round starts any more; rclone gets SIGTERM (as at `dotsafe sync`'s stop,
    /// `StopSignals`), then SIGKILL after `stopGrace`, and so does any started later, each with
    /// its whole process group (what a wrapper forked: `RunningChildren`); the round
    /// fails at its next step and leaves the storage as a cut sync does (its download folder
    /// removed; FORMAT.md §9.3, §13.11). The lock waits for that, `stopGrace` at most. A round busy
    /// in its merge's commit then (no rclone runs, no signal ends it) is safe to meet, and is
    /// waited for, here, to its end (a local step however long; true is returned): none starts
    /// once the rounds are abandoned (`committing`), so the one counted in `commits` then is the
    /// last. The locks would hold the close back all the same: `Vault.commitLive` holds the
    /// vault's lock (and, in a round a commit started, the file system's, `holdingRequests`) from
    /// the merge to its commit's last write, and the close (`FileSystem.close`, then `Vault.lock`)
    /// takes the same locks before its final commit, the storage's re-creation and the erasing of
    /// the keys. The round then goes on: its next transfer throws `RemoteError.interrupted` (no
    /// rclone starts once `RunningChildren` stops) and, once the vault is locked, its next vault
    /// call `VaultError.locked`, so nothing more is written or sent, and the merge goes up at the
    /// next sync; `pulled` reaches a mount that is gone and does nothing (`FUSEMount` keeps what
    /// it needs past `finish`). `SyncMountCommitLockTests`. This daemon serves one vault, so
    /// every child it has is this round's.
    private func abandonRounds(until done: DispatchSemaphore) -> Bool {
        state.withLock { $0.abandoned = true }
        RunningChildren.stop(with: SIGTERM)
        let committing = commits.wait(timeout: .now()) == .timedOut
        if committing { commits.wait() }
        if done.wait(timeout: .now() + Self.stopGrace) == .timedOut {
            RunningChildren.stop(with: SIGKILL)
            _ = done.wait(timeout: .now() + Self.stopGrace)
        }
        return committing
    }

    /// A round's `commitLive` (its plan, merge and commit, under the vault's lock), counted in
    /// `commits`; refused once the lock has given up on the rounds, as their transfers are.
    private func committing(_ commit: () throws -> LiveSyncCommit?) throws -> LiveSyncCommit? {
        try state.withLock { state throws(RemoteError) in
            if state.abandoned { throw RemoteError.interrupted(signal: SIGTERM) }
            commits.enter()
        }
        defer { commits.leave() }
        return try commit()
    }

    /// For `dotsafe status`: the round running now, or the last success, or the failure since,
    /// or that none ran yet. A round that runs after a failure says that failure: against a
    /// remote that keeps failing, rounds follow one another, and "syncing" would hide why.
    var status: String {
        state.withLock { state in
            let iso = ISO8601DateFormatter()
            if let started = state.roundStarted {
                if state.failing, let failure = state.lastFailure {
                    return "last sync failed at \(iso.string(from: failure.time)): \(failure.message); retrying"
                }
                return "syncing since \(iso.string(from: started))"
            }
            if let failure = state.lastFailure, state.lastSuccess.map({ $0 <= failure.time }) ?? true {
                return "failed at \(iso.string(from: failure.time)): \(failure.message)"
            }
            return state.lastSuccess.map { "synced at \(iso.string(from: $0))" } ?? "not yet synced"
        }
    }

    /// One round: its failure, if any, else its summary's warnings (logged here).
    @discardableResult
    private func round(fileSystem: FileSystem?, mount: FUSEMount?, logging: Bool = true,
                       filesMoved: ((SyncProgress) -> Void)? = nil) -> (failure: (any Error)?, warnings: [String]) {
        rounds.withLock { _ -> (failure: (any Error)?, warnings: [String]) in
            let abandoned = state.withLock { state in
                state.commitRoundAt = nil
                state.nextRoundAt = Self.uptime + interval
                if !state.abandoned { state.roundStarted = Date() }
                return state.abandoned
            }
            // Waited for behind a round the lock stopped (the last one, or an interval's).
            if abandoned { return (RemoteError.interrupted(signal: SIGTERM), []) }
            do {
                let summary = try synchronizer.run(holdingRequests: { body in
                    guard let fileSystem else { return try committing(body) }
                    return try fileSystem.holdingRequests { try committing(body) }
                }, pulled: { changes in
                    mount?.invalidate(items: changes.items, names: changes.names.map { ($0.parent, $0.name) })
                }, filesMoved: filesMoved)
                for warning in summary.warnings { log.write(.warning, warning) }
                state.withLock { state in
                    state.roundStarted = nil
                    state.lastSuccess = Date()
                    state.failing = false
                }
                return (nil, summary.warnings)
            } catch {
                let first = state.withLock { state in
                    defer {
                        state.roundStarted = nil
                        state.failing = true
                        state.lastFailure = (Date(), Self.describe(error))
                    }
                    return !state.failing && !state.stopped
                }
                if first && logging && fileSystem != nil {
                    log.write(.warning, "a sync with the remote failed: changes are kept here and sent at a later sync")
                }
                return (error, [])
            }
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? FailedAfterJoinReplaced { return FailedAfterJoinReplaced.failure(describe(error.failure), replaced: error.replaced) }
        return (error as? RemoteError)?.description ?? (error as? SyncRefusal)?.description
            ?? DotSafeCLI.describe(error)
    }

    private static var uptime: Double { ProcessInfo.processInfo.systemUptime }
}

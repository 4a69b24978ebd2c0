import Foundation
import SystemCalls
import VaultCrypto
import VaultStore

/// One file per open mount in the runtime folder (mode 0600): where it is mounted, which
/// storage, since when, the daemon's pid and the name of its lock channel. `dotsafe lock`
/// finds a daemon here; `dotsafe status` and `lock --all` can list them.
struct MountRecord: Codable, Equatable {
    static let suffix = ".mount"
    static let socketSuffix = ".sock"

    var mountPoint: String
    var storage: String
    /// Seconds since 1970 when the mount became ready.
    var started: Double
    var pid: Int32
    /// The random name this mount's record and lock channel share (no suffix).
    var name: String
    /// The daemon's re-creation budget (`--recreate-budget`), for the patience of a waiting
    /// `lock`; nil in a record of an earlier release.
    var recreateSecondsPerGiB: Double? = nil

    var socketName: String { name + Self.socketSuffix }

    /// A name nobody can guess or connect to a vault: 16 random bytes.
    static func randomName() throws -> String {
        try SystemRandom().bytes(16).map { String(format: "%02x", $0) }.joined()
    }

    func write(in folder: RuntimeFolder) throws {
        try PrivateFile.writeAtomically(folder.file(name + Self.suffix), Array(try JSONEncoder().encode(self)))
    }

    /// Removes the record and the channel's socket file.
    func remove(from folder: RuntimeFolder) {
        try? SystemCall.unlink(folder.file(name + Self.suffix))
        try? SystemCall.unlink(folder.file(socketName))
    }

    /// A connection to this mount's daemon, or nil when none listens (a killed daemon). The folder
    /// is private, so only we could have put a socket there; still, we talk only to the daemon the
    /// record names, running as us. `waiting`: seconds to wait for a daemon that takes no
    /// connection (stopped, hung) before saying it does not answer; nil waits for it.
    func connect(in folder: RuntimeFolder, waiting seconds: Int? = nil) throws -> UnixSocket? {
        let channel: UnixSocket
        do throws(UnixSocket.Failure) { channel = try UnixSocket.connect(folder.file(socketName), waiting: seconds) } catch {
            if error == .notAnswering { throw notAnswering }
            return nil
        }
        guard let peer = try? channel.peerCredentials(), peer.userID == SystemCall.userID, peer.processID == pid else {
            throw CLIError.failure("the lock channel of \(mountPoint) is not served by its daemon (pid \(pid))")
        }
        return channel
    }

    /// Seconds `status` and the clean-up of stale records give a daemon to take a connection
    /// and to answer: one that is stopped or hung must not hold them up.
    static let answerSeconds = 2

    var notAnswering: CLIError { .failure("the daemon of \(mountPoint) (pid \(pid)) does not answer") }

    /// The daemon's state, asked on its lock channel within `answerSeconds` for the connection
    /// and again for the answer; nil when no daemon listens (it was killed). Throws
    /// `notAnswering` for one that is stopped or hung.
    func state(in folder: RuntimeFolder) throws -> MountState? {
        guard let channel = try connect(in: folder, waiting: Self.answerSeconds) else { return nil }
        channel.setReceiveTimeout(seconds: Self.answerSeconds)
        channel.send("status")
        guard let line = channel.receiveLine(), let state = try? JSONDecoder().decode(MountState.self, from: Data(line.utf8)) else {
            throw notAnswering
        }
        return state
    }

    /// The mount point `path` names, as its record has it. The path as typed first: resolving
    /// it looks at the mount point, which waits (in the kernel, in silence) when the daemon
    /// does not answer; only a path no record has is resolved.
    static func mountPoint(_ path: String, in folder: RuntimeFolder?) -> String {
        let typed = MountTable.absolute(path)
        let isRecorded = folder.map { all(in: $0).contains { $0.mountPoint == typed } } ?? false
        return isRecorded ? typed : MountTable.canonical(path)
    }

    /// Every record in the folder (unreadable ones skipped).
    static func all(in folder: RuntimeFolder) -> [MountRecord] {
        let names = (try? SystemCall.listFolder(folder.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) && !$0.hasPrefix(".") }.compactMap { name in
            guard let bytes = try? PrivateFile.read(folder.file(name)) else { return nil }
            return try? JSONDecoder().decode(MountRecord.self, from: Data(bytes))
        }
    }

    /// Removes records whose daemon is gone (killed): their channel no longer answers. Also
    /// removes lock-channel sockets without a record that nobody listens on: a daemon killed
    /// while it started leaves one. Sockets bound in the last seconds are left alone: their maker
    /// may be between its bind and its listen.
    static func removeStale(in folder: RuntimeFolder) {
        let records = all(in: folder)
        for record in records where isDead(folder.file(record.socketName)) {
            record.remove(from: folder)
        }
        let recorded = Set(records.map(\.socketName))
        for name in (try? SystemCall.listFolder(folder.path)) ?? [] where name.hasSuffix(socketSuffix) && !recorded.contains(name) {
            guard folder.isSettled(name), isDead(folder.file(name)) else { continue }
            try? SystemCall.unlink(folder.file(name))
        }
    }

    /// Whether nothing listens on the socket at `path` (refused); one that does not answer in
    /// time (a stopped daemon) is alive.
    private static func isDead(_ path: String) -> Bool {
        Result(catching: { () throws(UnixSocket.Failure) in try UnixSocket.connect(path, waiting: answerSeconds) }).failure == .notListening
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

import Foundation
import Synchronization
import SystemCalls
import VaultFileSystem
import VaultFUSE

/// The daemon's end of `dotsafe lock` and `dotsafe status`: a Unix socket with a random name in
/// the private runtime folder, found through the mount's `MountRecord`. `lock` connects and sends
/// "lock"; the answer ("locked", "busy" or "failed: …") comes once the vault is locked, and the
/// connection closes when the daemon exits. `status` sends "status" and gets one line of JSON
/// (`MountState`). Each connection is served on its own thread with a receive timeout, so a
/// client that connects and says nothing holds up nobody.
final class LockChannel: Sendable {
    /// How long a connected client may take to say "lock".
    static let requestTimeoutSeconds = 5

    let folder: RuntimeFolder
    let name: String
    private let socket: UnixSocket
    private let waiting = Mutex<[UnixSocket]>([])

    private init(folder: RuntimeFolder, name: String, socket: UnixSocket) {
        self.folder = folder
        self.name = name
        self.socket = socket
    }

    /// Listens on a new random name; `register` then makes the mount findable.
    static func open(in folder: RuntimeFolder) throws -> LockChannel {
        MountRecord.removeStale(in: folder)
        do {
            let name = try MountRecord.randomName()
            return LockChannel(folder: folder, name: name, socket: try UnixSocket.listen(folder.file(name + MountRecord.socketSuffix)))
        } catch {
            throw CLIError.failure("cannot open the lock channel: \(error)")
        }
    }

    /// Writes the mount's record: from now on `dotsafe lock MOUNTPOINT` finds this daemon.
    func register(_ options: MountOptions) throws -> MountRecord {
        let record = MountRecord(mountPoint: options.mountPoint, storage: options.storage,
                                 started: Date().timeIntervalSince1970, pid: SystemCall.processID, name: name,
                                 recreateSecondsPerGiB: options.recreateSecondsPerGiB)
        do { try record.write(in: folder) } catch { throw CLIError.failure("cannot record the mount in \(folder.path): \(error)") }
        return record
    }

    /// Removes the record and the socket's name; connections already made stay open.
    func unregister() {
        MountRecord(mountPoint: "", storage: "", started: 0, pid: 0, name: name).remove(from: folder)
    }

    /// Serves lock and status requests on background threads until the process exits; any
    /// other request goes to `answer`, whose one line is the reply (`ShareRequests`).
    func serve(_ mount: FUSEMount, state: @escaping @Sendable () -> MountState,
               answer: @escaping @Sendable (String) -> String? = { _ in nil }) {
        let owner = SystemCall.userID
        Thread.detachNewThread { [self] in
            while let peer = try? socket.accept() {
                Thread.detachNewThread { [self] in handle(peer, owner: owner, mount: mount, state: state, other: answer) }
            }
        }
    }

    private func handle(_ peer: UnixSocket, owner: uid_t, mount: FUSEMount, state: () -> MountState, other: (String) -> String?) {
        guard let credentials = try? peer.peerCredentials(), credentials.userID == owner || credentials.userID == 0 else {
            peer.send("failed: only the user who mounted the vault can lock it")
            return
        }
        peer.setReceiveTimeout(seconds: Self.requestTimeoutSeconds)
        let request = peer.receiveLine()
        if request == "status" {
            peer.send(String(decoding: (try? JSONEncoder().encode(state())) ?? Data(), as: UTF8.self))
            return
        }
        guard let request else { return }
        guard request == "lock" else {
            if let reply = other(request) { peer.send(reply) }
            return
        }
        // Everything is written while the vault is still mounted: a commit that the storage
        // refuses (a full disk, a storage made read-only) would otherwise fail at the close,
        // after the unmount, and the changes would go with the keys. The user is there to make
        // room and lock again. Changes that can never go in (a grant withdrawn) do not hold it.
        do { try mount.fileSystem.synchronize() } catch let error where Self.storageRefused(error) {
            peer.send("failed: the changes could not be written (\(error)), so \(mount.mountPoint) stays mounted with "
                      + "them: make room on the storage's disk or remove files from the vault, then lock again "
                      + "(or unmount it with fusermount3 -u to give them up)")
            return
        } catch {}
        waiting.withLock { $0.append(peer) }
        do { try mount.unmount() } catch FUSEError.busy {
            answer(peer, "busy")
        } catch {
            answer(peer, "failed: \(error)")
        }
    }

    /// Whether a commit failed for what the storage's disk refused (room, permissions, a
    /// read-only file system), which the user can mend.
    private static func storageRefused(_ error: FSError) -> Bool {
        switch error {
        case .noSpace, .vault(.store): true
        default: false
        }
    }

    private func answer(_ peer: UnixSocket, _ line: String) {
        peer.send(line)
        waiting.withLock { $0.removeAll { $0 === peer } }
    }

    /// Answers every waiting `lock`; the connections stay open until the process exits.
    func answerAll(_ line: String) {
        for peer in waiting.withLock({ $0 }) { peer.send(line) }
    }
}

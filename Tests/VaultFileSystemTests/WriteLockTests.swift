import Dispatch
import DotSafeTestSupport
import Foundation
import Glibc
import Synchronization
import Testing
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultStore

/// One lock at a time on the write path: a write that waits in the vault (for write-behind
/// room, or for a new group's files behind it) must not hold the file system's lock, or every
/// other request would wait with it.
@Suite struct WriteLockTests {
    static let chunk = 262_144

    /// The first chunk's write-behind stops in the storage; the second finds no room (limit 1)
    /// and its writer waits inside the vault, outside its lock.
    @Test func aWriteWaitingForWriteBehindRoomDoesNotStopOtherRequests() throws {
        try Self.othersAreAnsweredWhileAWriteWaits(chunks: 4, writeBehindLimit: 1, held: .writes)
    }

    /// More chunks than free files: they go into a new group, made once its 16 files are sealed
    /// (docs/FORMAT.md §3.3), outside the vault's lock (a group was once made under it, and every
    /// request waited for its 16 files: seen with gdb). Here the group's creation stops in the
    /// storage, on the write-behind that sealed its last chunk, and holds the only room: the
    /// writer's next chunk waits for it, in the vault.
    @Test func aWriteThatNeedsANewGroupDoesNotStopOtherRequests() throws {
        // At most 6 chunks go into free files, the next 16 fill the group, the rest wait.
        try Self.othersAreAnsweredWhileAWriteWaits(chunks: 28, writeBehindLimit: 1, held: .groups)
    }

    /// Writes `chunks` chunks to a new file while the storage holds what `held` says, and checks
    /// that lookup, getattr and statfs are answered meanwhile; then lets the storage go.
    private static func othersAreAnsweredWhileAWriteWaits(chunks: Int, writeBehindLimit: Int, held: HeldStorageFolder.Held) throws {
        let storage = HeldStorageFolder(try FileSystemHarness.newStorage(), held: held)
        let vault = try Vault.open(storage: storage, secrets: FileSystemHarness.secrets(),
                                   options: Vault.Options(cacheBytes: 16 << 20, writeBehind: .background(limit: writeBehindLimit)),
                                   clock: ManualClock())
        let fs = FileSystem(vault: vault, clock: ManualClock(), options: FileSystem.Options(commitTickInterval: nil),
                            capacity: { [storage] in try storage.capacity() })
        let caller = Caller(uid: 1000, gid: 1000, umask: 0o022)
        let (attributes, handle) = try fs.create(FileSystem.rootInode, "big".bytes, mode: 0o644, flags: O_CREAT | O_RDWR, caller: caller)
        let bytes = pattern(chunks * Self.chunk)
        // A new vault's first storage write is its unlock record, made once under the lock before
        // anything else (docs/FORMAT.md §13.9): that is the vault's first commit here. It leaves
        // 6 to 10 free files (group 0 less slots, covers, record and page), 4 of them for pages.
        try vault.commit()

        storage.hold()
        // Threads of their own: in a full run, other tests' blocked work can hold every thread of
        // Dispatch's global pool for longer than this test waits.
        let writer = Finished()
        Thread.detachNewThread {
            writer.set(Result { try fs.write(handle, offset: 0, bytes: bytes) })
        }
        #expect(storage.waitForHeldWrite(seconds: 10), "a write-behind reached the storage (\(held))")

        let others = Finished()
        Thread.detachNewThread {
            others.set(Result {
                _ = try fs.lookup(FileSystem.rootInode, "big".bytes)
                _ = try fs.attributes(attributes.inode)
                return try fs.statistics().blockSize == 4096 ? 1 : 0
            })
        }
        let answered = others.wait(seconds: 10)
        #expect(answered, "lookup and getattr are answered while a write waits")
        #expect(!writer.isDone, "the write was still waiting when they were answered")

        storage.release()
        #expect(writer.wait(seconds: 60))
        #expect(try writer.result?.get() == bytes.count)
        if !answered { _ = others.wait(seconds: 60) }
        fs.release(handle)
        let reader = try fs.open(attributes.inode, flags: O_RDONLY, caller: .root)
        #expect(try fs.read(reader, offset: 0, count: bytes.count) == bytes)
        fs.release(reader)
        try fs.close()
    }
}

/// A result set once from another thread, waited for with a timeout.
private final class Finished: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let value = Mutex<Result<Int, any Error>?>(nil)

    func set(_ result: Result<Int, any Error>) {
        value.withLock { $0 = result }
        done.signal()
    }
    var isDone: Bool { value.withLock { $0 != nil } }
    var result: Result<Int, any Error>? { value.withLock { $0 } }
    func wait(seconds: Double) -> Bool {
        guard done.wait(timeout: .now() + seconds) == .success else { return false }
        done.signal()
        return true
    }
}

/// A simulated storage whose creates and writes, or whose new groups, wait while it is held,
/// on any thread.
private final class HeldStorageFolder: ForwardingStorageFolder, @unchecked Sendable {
    enum Held { case writes, groups }
    let held: Held
    private let gate = Mutex<DispatchGroup?>(nil)
    private let reached = DispatchSemaphore(value: 0)

    init(_ base: SimulatedStorageFolder, held: Held) {
        self.held = held
        super.init(base)
    }

    func hold() {
        let group = DispatchGroup()
        group.enter()
        gate.withLock { $0 = group }
    }
    func release() { gate.withLock { gate in gate?.leave(); gate = nil } }
    func waitForHeldWrite(seconds: Double) -> Bool { reached.wait(timeout: .now() + seconds) == .success }

    private func pass(_ kind: Held) {
        guard kind == held, let group = gate.withLock({ $0 }) else { return }
        reached.signal()
        group.wait()
    }

    override func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        pass(.writes)
        try base.create(name, contents: contents, durable: durable)
    }
    /// Held before any file of the group is made; the files then appear as the base makes them.
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        pass(.groups)
        try base.createGroup(files)
    }
    override func write(_ name: String, offset: Int, bytes: [UInt8]) throws {
        pass(.writes)
        try base.write(name, offset: offset, bytes: bytes)
    }
}

import DotSafeTestSupport
import Synchronization
import VaultCrypto
import VaultStore

/// A real storage folder that a test stops after a number of mutations, as a process killed
/// there (SIGKILL) would: what was written stays, the mutation at the cut and everything after
/// it never happens (`SimulatedStorageFolder` does this in memory; a sync needs the disk, where
/// rclone reads and writes the same files). Without a cut it counts the mutations, so that a
/// test can cut a run at each of them. `countsFiles`: it also counts the storage's files before
/// each mutation (R-BLK-5 at every step of a run, not only at its end).
final class CutStorageFolder: ForwardingStorageFolder, @unchecked Sendable {
    let countsFiles: Bool
    private let state: Mutex<(done: Int, cutAt: Int?)>
    private let kinds = Mutex<[String]>([])
    private let counts = Mutex<[Int]>([])

    /// `cutAt`: the number of mutations that happen before the cut; nil: none.
    init(_ base: any StorageFolder, cutAt: Int?, countsFiles: Bool = false) {
        self.countsFiles = countsFiles
        state = Mutex((0, cutAt))
        super.init(base)
    }

    /// With `countsFiles`: the storage's file count before each mutation done, in order.
    var countsBefore: [Int] { counts.withLock { $0 } }

    /// The mutations done so far.
    var mutations: Int { state.withLock { $0.done } }
    /// Their kinds, in order ("create", "remove", ...): what a cut left half done.
    var done: [String] { kinds.withLock { $0 } }

    override func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        try mutation("create") { try base.create(name, contents: contents, durable: durable) }
    }
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { try mutation("createGroup") { try base.createGroup(files) } }
    override func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        try mutation("createDurableGroup") { try base.createDurableGroup(files) }
    }
    override func write(_ name: String, offset: Int, bytes: [UInt8]) throws { try mutation("write") { try base.write(name, offset: offset, bytes: bytes) } }
    override func sync(_ names: [String]) throws { try mutation("sync") { try base.sync(names) } }
    override func syncFolder() throws { try mutation("syncFolder") { try base.syncFolder() } }
    override func remove(_ name: String) throws { try mutation("remove") { try base.remove(name) } }
    override func rename(_ name: String, to newName: String) throws { try mutation("rename") { try base.rename(name, to: newName) } }
    override func replace(_ name: String, contents: [UInt8]) throws { try mutation("replace") { try base.replace(name, contents: contents) } }
    override func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        try mutation("placeDownloads") { try base.placeDownloads(from: downloads, replacing: replacing, groups: groups) }
    }
    override func removeRecreationLeftovers() throws { try mutation("removeRecreationLeftovers") { try base.removeRecreationLeftovers() } }
    override func recreateAtLock(random: any RandomSource) throws { try mutation("recreateAtLock") { try base.recreateAtLock(random: random) } }

    private func mutation(_ kind: String, _ body: () throws -> Void) throws {
        try state.withLock { state in
            if let cutAt = state.cutAt, state.done >= cutAt { throw StoreError.simulatedCrash }
            state.done += 1
        }
        kinds.withLock { $0.append(kind) }
        if countsFiles {
            let count = try base.listFiles().count
            counts.withLock { $0.append(count) }
        }
        try body()
    }
}

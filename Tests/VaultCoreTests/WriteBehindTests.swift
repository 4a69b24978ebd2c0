import Dispatch
import DotSafeTestSupport
import Glibc
import Synchronization
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// Chunks that a sequential write completes are sealed and stored before the commit, outside
/// the vault's lock (write-behind). What is read, committed and reopened must be the latest
/// bytes whatever happens to a chunk while its write-behind runs.
@Suite struct WriteBehindTests {
    static let chunk = Format.payloadSize

    @Test func sequentialWritesSealCompletedChunksBeforeTheCommit() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let bytes = TestVaults.content(4 * Self.chunk + Self.chunk / 2)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("seq".utf8), mode: 0o644)
        for start in stride(from: 0, to: bytes.count, by: 64 << 10) {
            try vault.write(id, offset: UInt64(start), bytes: Array(bytes[start..<min(start + (64 << 10), bytes.count)]))
        }
        #expect(vault.statistics.chunkEncrypts == 4, "the four whole chunks go before the commit")
        try vault.commit()
        #expect(vault.statistics.chunkEncrypts == 5, "the commit seals only the partial last chunk")
        try vault.lock()
        #expect(try TestVaults.open(storage).readAll("seq") == bytes)
        try checkStorageInvariants(storage)
    }

    @Test func rewritesOfPagesAreNotWrittenBehind() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        var bytes = TestVaults.content(4 * Self.chunk)
        let id = try vault.makeFile("db", bytes)
        try vault.commit()
        let before = vault.statistics.chunkEncrypts
        // Page writes as a database makes them: never two in a row, never a whole chunk.
        for step in 0..<256 {
            let offset = (step * 7 % 256) * 4096
            let page = TestVaults.content(4096, seed: UInt64(step + 100))
            bytes.replaceSubrange(offset..<offset + 4096, with: page)
            try vault.write(id, offset: UInt64(offset), bytes: page)
        }
        #expect(vault.statistics.chunkEncrypts == before, "page rewrites stay in memory until the commit")
        try vault.commit()
        #expect(vault.statistics.chunkEncrypts == before + 4)
        try vault.lock()
        #expect(try TestVaults.open(storage).readAll("db") == bytes)
    }

    @Test func aWriteDuringItsWriteBehindWins() throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        let vault = try Self.backgroundVault(storage)
        var bytes = TestVaults.content(2 * Self.chunk)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("f".utf8), mode: 0o644)
        storage.close()
        try vault.write(id, offset: 0, bytes: bytes)  // chunks 0 and 1 go behind, and stop at the gate
        let patch = [UInt8](repeating: 0xEE, count: 100)
        bytes.replaceSubrange(10..<110, with: patch)
        try vault.write(id, offset: 10, bytes: patch)
        #expect(try vault.read(id, offset: 0, count: 200) == Array(bytes[0..<200]))
        storage.open()
        try vault.commit()
        // Two write-behinds of the same chunks at once: whichever finishes last, the newer wins.
        for round in 0..<8 {
            storage.close()
            try vault.write(id, offset: 0, bytes: TestVaults.content(bytes.count, seed: UInt64(round)))
            bytes = TestVaults.content(bytes.count, seed: UInt64(round + 100))
            try vault.write(id, offset: 0, bytes: bytes)
            storage.open()
            try vault.commit()
            #expect(try vault.read(id, offset: 0, count: bytes.count) == bytes)
        }
        try vault.commit()
        #expect(try vault.read(id, offset: 0, count: bytes.count) == bytes)
        try vault.lock()
        #expect(try TestVaults.open(storage).readAll("f") == bytes)
        try checkStorageInvariants(storage.simulated)
    }

    @Test func truncateDeleteAndEvictionDuringWritesBehind() throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        // The smallest cache (two chunks): chunks in flight are evicted and must still read back.
        let vault = try Self.backgroundVault(storage, cacheBytes: 0)
        let kept = TestVaults.content(3 * Self.chunk, seed: 1), gone = TestVaults.content(2 * Self.chunk, seed: 2)
        let keptID = try vault.create(.file, in: Vault.rootID, named: Array("kept".utf8), mode: 0o644)
        let goneID = try vault.create(.file, in: Vault.rootID, named: Array("gone".utf8), mode: 0o644)
        storage.close()
        try vault.write(keptID, offset: 0, bytes: kept)
        try vault.write(goneID, offset: 0, bytes: gone)
        #expect(try vault.read(keptID, offset: 0, count: kept.count) == kept)
        try vault.truncate(keptID, size: UInt64(Self.chunk / 2))
        try vault.remove(Array("gone".utf8), from: Vault.rootID)
        storage.open()
        try vault.commit()
        try vault.lock()
        let reopened = try TestVaults.open(storage)
        #expect(try reopened.readAll("kept") == Array(kept[0..<Self.chunk / 2]))
        #expect(throws: VaultError.notFound) { try reopened.lookup(Vault.rootID, Array("gone".utf8)) }
        #expect(try reopened.check().isClean)
        try reopened.lock()
        try checkStorageInvariants(storage.simulated)
    }

    @Test func aFailedWriteBehindLeavesTheChunkForTheCommit() throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        let vault = try Self.backgroundVault(storage)
        let bytes = TestVaults.content(2 * Self.chunk + 5)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("f".utf8), mode: 0o644)
        try vault.commit()
        storage.failing(true)
        try vault.write(id, offset: 0, bytes: bytes)
        #expect(throws: VaultError.store(.noSpace)) { try vault.commit() }
        #expect(VaultError.store(.noSpace).description.contains("space"))
        #expect(try vault.read(id, offset: 0, count: bytes.count) == bytes, "nothing is lost in memory")
        storage.failing(false)
        try vault.commit()
        try vault.lock()
        #expect(try TestVaults.open(storage).readAll("f") == bytes)
        try checkStorageInvariants(storage.simulated)
    }

    @Test func concurrentWritersReadersAndCommits() throws {
        let storage = try TestVaults.storage()
        let vault = try Self.backgroundVault(storage, cacheBytes: 2 << 20)
        let files = (0..<4).map { TestVaults.content(6 * Self.chunk + 1234 * $0, seed: UInt64($0 + 10)) }
        let ids = try files.indices.map { try vault.create(.file, in: Vault.rootID, named: Array("f\($0)".utf8), mode: 0o644) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: files.count + 1) { worker in
            do {
                if worker == files.count {
                    for _ in 0..<10 { try vault.commit() }
                    return
                }
                let bytes = files[worker]
                for start in stride(from: 0, to: bytes.count, by: 100_000) {
                    let piece = Array(bytes[start..<min(start + 100_000, bytes.count)])
                    try vault.write(ids[worker], offset: UInt64(start), bytes: piece)
                    let back = try vault.read(ids[worker], offset: UInt64(start), count: piece.count)
                    if back != piece { failures.withLock { $0.append("file \(worker) at \(start) read back other bytes") } }
                }
            } catch {
                failures.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        try vault.lock()
        let reopened = try TestVaults.open(storage)
        for (index, bytes) in files.enumerated() { #expect(try reopened.readAll("f\(index)") == bytes) }
        #expect(try reopened.check().isClean)
        try checkStorageInvariants(storage)
    }

    static func backgroundVault(_ storage: any StorageFolder, cacheBytes: Int = 8 << 20) throws -> Vault {
        try Vault.open(storage: storage, secrets: TestVaults.secrets(),
                       options: Vault.Options(cacheBytes: cacheBytes, writeBehind: .background(limit: 8)), clock: ManualClock())
    }
}

/// A storage whose creates and writes from other threads than the one that closed the gate
/// (the write-behinds') wait while it is closed; or that fails them all as on a full disk.
final class GatedStorageFolder: ForwardingStorageFolder, @unchecked Sendable {
    let simulated: SimulatedStorageFolder
    private let gate = Mutex<(group: DispatchGroup, owner: pthread_t)?>(nil)
    private let failure = Mutex(false)
    private let log = Mutex<[String]>([])
    private let readGate = Mutex<(group: DispatchGroup, owner: pthread_t)?>(nil)

    init(_ base: SimulatedStorageFolder) {
        simulated = base
        super.init(base)
    }

    /// Names created or written since the last call, in order.
    func takeWritten() -> [String] { log.withLock { log in defer { log = [] }; return log } }

    func close() {
        let group = DispatchGroup()
        group.enter()
        gate.withLock { $0 = (group, pthread_self()) }
    }
    func open() { gate.withLock { gate in gate?.group.leave(); gate = nil } }
    /// The same for whole-file reads (chunk loads).
    func closeReads() {
        let group = DispatchGroup()
        group.enter()
        readGate.withLock { $0 = (group, pthread_self()) }
    }
    func openReads() { readGate.withLock { gate in gate?.group.leave(); gate = nil } }
    func failing(_ on: Bool) { failure.withLock { $0 = on } }

    private func pass(_ name: String) throws {
        log.withLock { $0.append(name) }
        if let (group, owner) = gate.withLock({ $0 }), pthread_equal(owner, pthread_self()) == 0 { group.wait() }
        if failure.withLock({ $0 }) { throw StoreError.noSpace }
    }

    override func read(_ name: String) throws -> [UInt8]? {
        if let (group, owner) = readGate.withLock({ $0 }), pthread_equal(owner, pthread_self()) == 0 { group.wait() }
        return try base.read(name)
    }
    override func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        try pass(name)
        try base.create(name, contents: contents, durable: durable)
    }
    /// Each file of a group gated and logged as a create.
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { try createOneByOne(files) }
    override func write(_ name: String, offset: Int, bytes: [UInt8]) throws {
        try pass(name)
        try base.write(name, offset: offset, bytes: bytes)
    }
}

import DotSafeTestSupport
import Foundation
import Synchronization
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// A request never makes a storage group under the vault's lock (issue 17): data that finds the
/// free files down to the reserve waits in the cache while the request makes the group with
/// the lock released. Every file a write creates after the vault's first commit is a group's
/// (chunks go into files the group made), so each create must find the lock free.
@Suite struct GroupOutsideLockTests {
    static let chunk = Format.payloadSize

    /// Sequential writes: their chunks are written behind (inline here, after the lock).
    @Test func writesBehindMakeTheirGroupsOutsideTheLock() throws {
        let storage = LockProbingStorage(try TestVaults.storage())
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        storage.probe(vault)
        defer { storage.probe(nil) }
        let bytes = TestVaults.content(40 * Self.chunk + 123)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("seq".utf8), mode: 0o644)
        try vault.commit()
        _ = storage.takeCreates()
        for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
            try vault.write(id, offset: UInt64(start), bytes: Array(bytes[start..<min(start + (1 << 20), bytes.count)]))
        }
        let creates = storage.takeCreates()
        #expect(creates.count >= 32, "40 chunks need two new groups at least")
        #expect(creates.allSatisfy { $0 }, "\(creates.filter { !$0 }.count) of \(creates.count) files made under the lock")
        try vault.commit()
        try vault.lock()
        #expect(try TestVaults.open(storage.simulated).readAll("seq") == bytes)
        try checkStorageInvariants(storage.simulated)
    }

    /// Writes that complete no chunk (a database's pages) stay dirty until a full cache evicts
    /// them, under the lock: the groups they need are made after it.
    @Test func evictionsMakeTheirGroupsOutsideTheLock() throws {
        let storage = LockProbingStorage(try TestVaults.storage())
        let vault = try TestVaults.open(storage, cacheBytes: 0)
        storage.probe(vault)
        defer { storage.probe(nil) }
        let id = try vault.create(.file, in: Vault.rootID, named: Array("pages".utf8), mode: 0o644)
        try vault.commit()
        _ = storage.takeCreates()
        var expected = [UInt8](repeating: 0, count: 40 * Self.chunk)
        for index in 0..<40 {
            let piece = TestVaults.content(200_000, seed: UInt64(index + 1))
            expected.replaceSubrange(index * Self.chunk..<index * Self.chunk + piece.count, with: piece)
            try vault.write(id, offset: UInt64(index * Self.chunk), bytes: piece)
        }
        expected.removeLast(Self.chunk - 200_000)
        #expect(vault.statistics.chunkEncrypts >= 32, "the small cache evicted the chunks")
        let creates = storage.takeCreates()
        #expect(creates.count >= 16)
        #expect(creates.allSatisfy { $0 }, "\(creates.filter { !$0 }.count) of \(creates.count) files made under the lock")
        #expect(try vault.read(id, offset: 0, count: expected.count) == expected)
        try vault.lock()
        #expect(try TestVaults.open(storage.simulated).readAll("pages") == expected)
        try checkStorageInvariants(storage.simulated)
    }

    /// A full disk: the group a write needs cannot be made. Nothing of it stays (the count of
    /// files stays a multiple of 16), the data waits in memory, and the commit says ENOSPC;
    /// with room again everything is written.
    @Test func aGroupThatCannotBeMadeLeavesNoFileAndLosesNothing() throws {
        let storage = LockProbingStorage(try TestVaults.storage())
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        let bytes = TestVaults.content(24 * Self.chunk)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        try vault.commit()
        storage.failCreates(afterCount: 5)
        try vault.write(id, offset: 0, bytes: bytes)
        try checkStorageInvariants(storage.simulated)
        #expect(throws: VaultError.store(.noSpace)) { try vault.commit() }
        try checkStorageInvariants(storage.simulated)
        #expect(try vault.read(id, offset: 0, count: bytes.count) == bytes, "nothing is lost in memory")
        storage.failCreates(afterCount: nil)
        try vault.commit()
        try vault.lock()
        #expect(try TestVaults.open(storage.simulated).readAll("big") == bytes)
        try checkStorageInvariants(storage.simulated)
    }
}

/// A simulated storage that notes, for each file created, whether the vault's lock was free at
/// that moment (tried, not waited for); or that refuses creates as a full disk does.
final class LockProbingStorage: ForwardingStorageFolder, @unchecked Sendable {
    let simulated: SimulatedStorageFolder
    private let vault = Mutex<Vault?>(nil)
    private let creates = Mutex<[Bool]>([])
    private let createsLeft = Mutex<Int?>(nil)

    init(_ base: SimulatedStorageFolder) {
        simulated = base
        super.init(base)
    }

    /// Probes `vault`'s lock from now on; nil ends it (the vault holds this storage).
    func probe(_ vault: Vault?) { self.vault.withLock { $0 = vault } }
    /// Whether the lock was free at each create since the last call.
    func takeCreates() -> [Bool] { creates.withLock { creates in defer { creates = [] }; return creates } }
    /// Lets `count` more creates through, then fails each with ENOSPC; nil: no limit.
    func failCreates(afterCount count: Int?) { createsLeft.withLock { $0 = count } }

    override func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        try createsLeft.withLock { left in
            guard let count = left else { return }
            guard count > 0 else { throw StoreError.noSpace }
            left = count - 1
        }
        if let vault = vault.withLock({ $0 }) { creates.withLock { $0.append(Self.lockIsFree(vault)) } }
        try base.create(name, contents: contents, durable: durable)
    }
    /// The disk's room: none once creates fail.
    override func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) {
        if createsLeft.withLock({ $0 }) == 0 { return (1 << 30, 0, 0) }
        return try base.capacity()
    }
    /// Each file probed and counted as a create: a full disk fails a group half made.
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { try createOneByOne(files) }

    /// Tried from another thread: a Mutex tried by the thread that holds it stops the process.
    private static func lockIsFree(_ vault: Vault) -> Bool {
        final class Answer: Sendable { let free = Mutex(false) }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            answer.free.withLock { $0 = vault.state.withLockIfAvailable { _ in true } ?? false }
            done.signal()
        }
        done.wait()
        return answer.free.withLock { $0 }
    }

}

import Testing
import VaultCore
import VaultFormat
import VaultStore

/// Compaction at a commit moves the members of nearly empty packs into the open pack. When the
/// open pack is full, the pack with the most free tail becomes the open one, and that may be a
/// nearly empty pack still waiting in the same commit's list.
@Suite struct PackCompactionTests {
    @Test func aPackThatBecameTheOpenPackIsNotCompactedFromDisk() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        var contents: [String: [UInt8]] = [:]
        func make(_ name: String, _ count: Int) throws {
            contents[name] = TestVaults.content(count, seed: UInt64(contents.count + 1))
            try vault.makeFile(name, contents[name]!)
        }
        // Pack A: 255,048 of 262,192 bytes. Pack P: 20,032 bytes. Pack O: 250,016 bytes, open.
        try make("a-live", 50_000); try make("a-dead1", 150_000); try make("a-dead2", 55_000)
        try vault.commit()
        try make("p-live", 10_000); try make("p-dead", 10_000)
        try vault.commit()
        try make("o", 250_000)
        try vault.commit()
        // A and P become nearly empty. Compacting A: a-live does not fit O's tail, so P, with the
        // most free tail, becomes the open pack and takes it; P is next in the list.
        for name in ["a-dead1", "a-dead2", "p-dead"] {
            try vault.remove(Array(name.utf8), from: Vault.rootID)
            contents[name] = nil
        }
        try vault.commit()
        for (name, bytes) in contents { #expect(try vault.readAll(name) == bytes, "\(name), live") }
        try vault.lock()
        let reopened = try TestVaults.open(storage)
        for (name, bytes) in contents { #expect(try reopened.readAll(name) == bytes, "\(name), reopened") }
        #expect(try reopened.check().isClean)
        try reopened.lock()
        try checkStorageInvariants(storage)
    }

    /// A pack that lost members, with no other pack to move them into, waits unread: compaction
    /// read its members at every commit before `place` found nowhere to put them.
    @Test func aSparsePackWithNowhereToGoIsNotRead() throws {
        let storage = CountingStorageFolder(try TestVaults.storage())
        let live = TestVaults.content(10_000, seed: 1)
        let first = try TestVaults.open(storage)
        try first.makeFile("live", live)
        try first.makeFile("dead", TestVaults.content(100_000, seed: 2))
        try first.lock()
        // A new session has no open pack: the one pack, down to 10 kB of 110, is to compact.
        let vault = try TestVaults.open(storage)
        try vault.remove(Array("dead".utf8), from: Vault.rootID)
        storage.reset()
        try vault.commit()
        #expect(storage.current.bytesRead == 0, "the commit read \(storage.current.bytesRead) bytes")
        #expect(storage.current.writes + storage.current.creates > 0, "the delete was not committed")
        #expect(try vault.readAll("live") == live)
        try vault.lock()
        let reopened = try TestVaults.open(storage)
        #expect(try reopened.readAll("live") == live)
        #expect(try reopened.check().isClean)
        try reopened.lock()
    }
}

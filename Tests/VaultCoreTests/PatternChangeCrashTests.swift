import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// R-KEY-6, docs/FORMAT.md §13.12: a pattern change cut by a crash at every storage mutation
/// (the process killed, or the power cut) leaves a storage in which the old or the new pattern
/// opens the whole vault, never neither, and the other opens the whole vault too or nothing. Run
/// again the way a user would, the change then finishes: the new pattern opens the vault, the
/// old one nothing, no file opens as the old pattern's unlock record, and the file count never
/// moved. The same for a vault upgraded from format 1, whose change also moves its slots and
/// every file to new names (§13.12): afterwards no storage name is one the old pattern derives;
/// and for one that is also shared, whose grant is sealed again to the new root locator: at
/// every instant its grantee opens the whole vault through it too.
@Suite struct PatternChangeCrashTests {
    static let old: UInt8 = 1
    static let new: UInt8 = 2

    struct Start: Sendable {
        var files: [String: [UInt8]]
        var tree: Tree
        /// For a shared vault: its contact code, by which the grantee (`grantee`) opens it.
        var sharedBy: ContactCode?
    }

    /// The pattern of the vault the shared start is shared with (in the same storage).
    static let grantee: UInt8 = 3

    /// A vault of the old pattern: a folder, small files (a pack) and a three-chunk file.
    static let start = Result { try makeStart(upgraded: false) }
    /// The same made in format 1, then upgraded by a session that writes (§13.9).
    static let upgradedStart = Result { try makeStart(upgraded: true) }
    /// The upgraded one shared with the vault of `grantee`.
    static let sharedStart = Result { try makeStart(upgraded: true, shared: true) }

    /// A start whose change makes no group, so that the file count may not move at all (§13.12: a
    /// change with no free number makes a group of 16). The change takes one free number, and the
    /// move of an upgraded vault two more (`a`, `b`); the covers' count is random, and six of them
    /// leave two in device 0's only group: such a start is made again.
    static func makeStart(upgraded: Bool, shared: Bool = false) throws -> Start {
        let room = upgraded ? 3 : 1
        for _ in 0..<20 {
            let (start, free) = try makeStartOnce(upgraded: upgraded, shared: shared)
            if free >= room { return start }
        }
        throw InvariantError("20 starts, none with \(room) free files")
    }

    /// A start and the number of free files it leaves.
    static func makeStartOnce(upgraded: Bool, shared: Bool) throws -> (Start, Int) {
        let storage = try TestVaults.storage()
        let code = shared ? try VaultSharingTests.code(storage, seed: grantee) : nil
        let vault = try TestVaults.open(storage, seed: old, format: upgraded ? .one : .two)
        try vault.create(.folder, in: Vault.rootID, named: Array("dir".utf8), mode: 0o755)
        try vault.makeFile("small", TestVaults.content(1000, seed: 1))
        try vault.makeFile("big", TestVaults.content(2 * Format.payloadSize + 7, seed: 2))
        try vault.makeFile("inner", TestVaults.content(300, seed: 3), in: try vault.id(at: "dir"))
        try vault.lock()
        if upgraded {
            let upgrading = try TestVaults.open(storage, seed: old)
            try upgrading.makeFile("added", TestVaults.content(500, seed: 4))
            if let code {
                try upgrading.share(with: code)
                // The grant and the vault of `grantee` can leave no free number for the move's three
                // (the covers' count is random): its chunks freed, the change needs no new group.
                try upgrading.remove(Array("big".utf8), from: Vault.rootID)
            }
            try upgrading.lock()
        }
        var sharedBy: ContactCode?
        if shared {
            let owner = try TestVaults.open(storage, seed: old, readOnly: true)
            defer { try? owner.lock() }
            sharedBy = try owner.contactCode().code
        }
        let reopened = try TestVaults.open(storage, seed: old, readOnly: true)
        defer { try? reopened.lock() }
        guard reopened.namesArePatternDerived == (upgraded, upgraded) else { throw InvariantError("the start's names are not as made") }
        let free = reopened.state.withLock { $0.writer.allocator.freeCount }
        return (Start(files: storage.snapshot, tree: try reopened.tree(), sharedBy: sharedBy), free)
    }

    enum Opens: Equatable { case all, nothing }

    /// What a pattern opens, read-only (a read-only open changes nothing): the whole vault, or a
    /// new, empty one. Anything else (part of it, an error) fails the test.
    static func opens(_ storage: SimulatedStorageFolder, _ seed: UInt8, _ context: String, _ start: Start) throws -> Opens {
        let expected = start.tree
        let vault = try TestVaults.open(storage, seed: seed, readOnly: true)
        defer { try? vault.lock() }
        if vault.isNew { return .nothing }
        let tree = try vault.tree()
        #expect(tree == expected, "\(context): pattern \(seed) opens part of the vault: \(treeDifference(tree, expected))")
        return .all
    }

    /// Whether `file` opens as an owner unlock record with the pattern's index key.
    static func opensAsUnlockRecord(_ file: [UInt8], _ secrets: VaultSecrets) -> Bool {
        (try? Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: StorageFormat.two.envelopeVersion,
                                  key: .secret(secrets.indexKey), seal: .unlock(location: Label.localLocation))) != nil
    }

    /// The grantee opens the whole vault through its grant (read-only: nothing changes).
    static func granteeOpensAll(_ storage: SimulatedStorageFolder, _ context: String, _ start: Start) throws {
        guard let code = start.sharedBy else { return }
        let vault = try VaultSharingTests.open(storage, seed: grantee, by: code, readOnly: true)
        defer { try? vault.lock() }
        let tree = try vault.tree()
        #expect(tree == start.tree, "\(context): the grantee opens part of the vault: \(treeDifference(tree, start.tree))")
    }

    @Test(arguments: [CrashTests.Crash.process, .power], [false, true])
    func crashAtEveryMutationOfAPatternChange(_ crash: CrashTests.Crash, upgraded: Bool) throws {
        try Self.crashAtEveryMutation(crash, start: try (upgraded ? Self.upgradedStart : Self.start).get(), upgraded ? "upgraded, " : "")
    }

    /// Shared too: step 5a seals the grant again to RL' (§13.12).
    @Test(arguments: [CrashTests.Crash.process, .power])
    func crashAtEveryMutationOfASharedUpgradedVaultsPatternChange(_ crash: CrashTests.Crash) throws {
        try Self.crashAtEveryMutation(crash, start: try Self.sharedStart.get(), "upgraded and shared, ")
    }

    static func crashAtEveryMutation(_ crash: CrashTests.Crash, start: Start, _ kind: String) throws {
        var mutations = 0
        var completed = false
        var seen: Set<String> = []
        while !completed {
            let storage = CrashTests.storage(start.files)
            let vault = try TestVaults.open(storage, seed: Self.old)
            completed = try crash.cut(storage, afterMutations: mutations) { try vault.changePattern(to: try TestVaults.secrets(Self.new)) }
            let context = "\(kind)\(crash) crash after \(mutations) mutations"
            let old = try Self.opens(storage, Self.old, context, start), new = try Self.opens(storage, Self.new, context, start)
            #expect(old == .all || new == .all, "\(context): neither pattern opens the vault")
            try granteeOpensAll(storage, context, start)
            if completed { #expect(old == .nothing && new == .all, "\(context): the change returned") }
            seen.insert("\(old)/\(new)")
            try checkStorageInvariants(storage)
            #expect(storage.snapshot.count == start.files.count, "\(context): the file count moved")
            seen.insert(try Self.finish(storage, context, start))
            mutations += 1
            try #require(mutations < 400, "the change never completed")
        }
        // Every state of §13.12's table was met, and each way a run finishes a change.
        #expect(seen.isSuperset(of: ["all/nothing", "all/all", "nothing/all", "changed again", "finished by the old pattern's open",
                                     "finished by the new pattern's open"]), "\(seen)")
        #expect(mutations > 10)
    }

    /// What a user does next: runs the change again with the old pattern, or, when the old one
    /// opens nothing any more, mounts with the new one. Then checks the end state. Returns how
    /// the change was finished.
    static func finish(_ storage: SimulatedStorageFolder, _ context: String, _ start: Start) throws -> String {
        let oldSecrets = try TestVaults.secrets(old), newSecrets = try TestVaults.secrets(new)
        let oldName = try FormatTwoKeys.unlockName(locator: oldSecrets.locator)
        let vault = try TestVaults.open(storage, seed: old)
        let how: String
        if vault.isNew {
            try vault.lock()
            let viaNew = try TestVaults.open(storage, seed: new)
            how = viaNew.openedThroughFormerPattern ? "?" : "finished by the new pattern's open"
            try viaNew.lock()
        } else if vault.openedThroughFormerPattern {
            #expect(try vault.isOwned(by: newSecrets), "\(context)")
            how = "finished by the old pattern's open"
            try vault.lock()
        } else {
            try vault.changePattern(to: newSecrets)
            how = "changed again"
            try vault.lock()
        }
        let then = "\(context), then \(how)"
        #expect(try opens(storage, old, then, start) == .nothing && opens(storage, new, then, start) == .all, "\(then)")
        try granteeOpensAll(storage, then, start)
        try checkStorageInvariants(storage)
        let files = storage.snapshot
        #expect(files.count == start.files.count, "\(then): the file count moved")
        #expect(files[oldName] == nil, "\(then): the old pattern's unlock name is still there")
        let oldNames = try UpgradedPatternChangeTests.patternNames(old, count: files.count + 64)
        #expect(files.keys.allSatisfy { !oldNames.contains($0) }, "\(then): a storage name still comes from the old pattern")
        #expect(!files.values.contains { opensAsUnlockRecord($0, oldSecrets) }, "\(then): the old unlock record is still in a file")
        #expect(files.values.filter { opensAsUnlockRecord($0, newSecrets) }.count == 1, "\(then): not one new unlock record")
        return how
    }
}

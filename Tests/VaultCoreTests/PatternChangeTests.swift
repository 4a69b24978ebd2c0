import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// R-KEY-6, docs/FORMAT.md §13.12 without crashes: what a pattern change writes, what it
/// refuses (writing nothing), and how an open finishes a change whose renames were left half
/// done or whose old name a new vault has taken since.
@Suite struct PatternChangeTests {
    static func populated() throws -> SimulatedStorageFolder {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, seed: 1)
        try vault.makeFile("a", TestVaults.content(5000, seed: 1))
        try vault.makeFile("b", TestVaults.content(Format.payloadSize + 1, seed: 2))
        try vault.lock()
        return storage
    }

    static func contents(_ storage: any StorageFolder, _ seed: UInt8) throws -> [String: [UInt8]]? {
        let vault = try TestVaults.open(storage, seed: seed, readOnly: true)
        defer { try? vault.lock() }
        if vault.isNew { return nil }
        return Dictionary(uniqueKeysWithValues: try vault.tree().map { path, entry in
            guard case .file(_, let content) = entry else { return (path, []) }
            return (path, content)
        })
    }

    @Test func aChangeRenamesTwoFilesAndMakesOrRemovesNone() throws {
        let storage = try Self.populated()
        let expected = try Self.contents(storage, 1)
        let before = storage.snapshot
        let counting = CountingStorageFolder(storage)
        let vault = try TestVaults.open(counting, seed: 1)
        var steps: [Int] = []
        try vault.changePattern(to: try TestVaults.secrets(2)) { steps.append($0) }
        try vault.lock()
        #expect(steps == [1, 2, 3] && Vault.patternChangeSteps == 3)
        let counts = counting.current
        #expect(counts.renames == 2 && counts.creates == 0 && counts.removes == 0, "\(counts)")
        #expect(storage.snapshot.count == before.count)
        #expect(try Self.contents(storage, 2) == expected)
        #expect(try Self.contents(storage, 1) == nil)
        // The old record's name is gone and its bytes are nowhere.
        let oldName = try FormatTwoKeys.unlockName(locator: try TestVaults.secrets(1).locator)
        let oldRecord = try #require(before[oldName])
        #expect(storage.snapshot[oldName] == nil && !storage.snapshot.values.contains(oldRecord))
        // Changed back: the first pattern opens it again.
        let again = try TestVaults.open(storage, seed: 2)
        try again.changePattern(to: try TestVaults.secrets(1))
        try again.lock()
        #expect(try Self.contents(storage, 1) == expected && Self.contents(storage, 2) == nil)
    }

    /// A grant (§14.7) is sealed to the recipient and names the vault's identity, not its
    /// pattern: it keeps opening the vault after the owner's pattern changes, and both write.
    @Test func aGrantStillOpensTheVaultAfterAChange() throws {
        let (storage, codeA, _) = try VaultSharingTests.sharedStorage()
        let owner = try TestVaults.open(storage, seed: 1)
        try owner.changePattern(to: try TestVaults.secrets(3))
        #expect(try owner.contactCode().code == codeA, "the identity stays")
        try owner.lock()
        let shared = try VaultSharingTests.open(storage, seed: 2, by: codeA)
        #expect(try shared.readAll("hello") == Array("from A".utf8))
        _ = try shared.makeFile("from-b", Array("B".utf8))
        try shared.lock()
        let again = try TestVaults.open(storage, seed: 3)
        #expect(try again.readAll("from-b") == Array("B".utf8))
        try again.lock()
        #expect(try Self.contents(storage, 1) == nil)
        try checkStorageInvariants(storage)
    }

    @Test func refusalsWriteNothing() throws {
        let storage = try Self.populated()
        // Another vault, at pattern 3.
        let other = try TestVaults.open(storage, seed: 3)
        try other.makeFile("other", [7])
        try other.lock()
        let before = storage.snapshot

        let vault = try TestVaults.open(storage, seed: 1)
        #expect(throws: PatternChangeError.newPatternInUse) { try vault.changePattern(to: try TestVaults.secrets(3)) }
        #expect(try Vault.patternUse(try TestVaults.secrets(3), in: storage) == .formatTwo)
        try vault.lock()
        let empty = try TestVaults.open(storage, seed: 4)
        #expect(try Vault.patternUse(try TestVaults.secrets(4), in: storage) == Vault.PatternUse.none)
        #expect(throws: PatternChangeError.noVault) { try empty.changePattern(to: try TestVaults.secrets(5)) }
        try empty.lock()
        #expect(storage.snapshot == before)
        #expect(try Self.contents(storage, 3) == ["other": [7]])

        let formatOne = try TestVaults.storage()
        let one = try TestVaults.open(formatOne, seed: 1, format: .one)
        try one.makeFile("a", [1])
        try one.lock()
        let oneBefore = formatOne.snapshot
        #expect(try Vault.patternUse(try TestVaults.secrets(1), in: formatOne) == .formatOne)
        let reopened = try TestVaults.open(formatOne, seed: 1)
        #expect(throws: PatternChangeError.formatOne) { try reopened.changePattern(to: try TestVaults.secrets(2)) }
        try reopened.lock()
        #expect(formatOne.snapshot == oneBefore)
        // Upgraded by a commit (FORMAT.md §13.9), it changes: `UpgradedPatternChangeTests`.
    }

    /// The state a crash right after the change's commit point leaves (§13.12 step 2 done).
    static func cutAfterCommitPoint() throws -> (storage: SimulatedStorageFolder, count: Int) {
        let storage = try Self.populated()
        let count = storage.snapshot.count
        let vault = try TestVaults.open(storage, seed: 1)
        var cut = false
        do {
            try vault.changePattern(to: try TestVaults.secrets(2)) { step in
                if step == 1 { storage.crash(afterMutations: 0) }
            }
        } catch VaultError.store(.simulatedCrash) {
            cut = true
        }
        storage.processCrash()
        try #require(cut)
        return (storage, count)
    }

    /// A copy of the new record put back at its device name beside the renamed one: the open of
    /// the new pattern removes the device name, and the count is back.
    @Test func aHalfDoneRenameIsFinished() throws {
        let (storage, count) = try Self.cutAfterCommitPoint()
        let vault = try TestVaults.open(storage, seed: 1, readOnly: true)
        let owner = try #require(vault.state.withLock { $0.committer.formatTwo?.specialFiles.first { $0.role == .ownerUnlock } })
        let deviceName = try vault.state.withLock { try $0.name(owner.file.number) }
        try vault.lock()
        storage.tamper(FileName.encode(owner.name), with: storage.bytes(deviceName))
        #expect(storage.snapshot.count == count + 1)
        let expected = try Self.contents(storage, 2)
        let viaNew = try TestVaults.open(storage, seed: 2)
        try viaNew.lock()
        #expect(storage.snapshot.count == count && storage.snapshot[deviceName] == nil)
        #expect(try Self.contents(storage, 2) == expected && Self.contents(storage, 1) == nil)
    }

    /// After step 4's rename the old pattern opens a new, empty vault; one written there takes
    /// the old name again. Finishing the change later leaves that vault alone.
    @Test func aVaultMadeAtTheOldNameMeanwhileIsKept() throws {
        let (storage, _) = try Self.cutAfterCommitPoint()
        // Steps 3 and 4's renames, as the change would have made them, then a crash.
        let vault = try TestVaults.open(storage, seed: 1, readOnly: true)
        let (owner, former) = try vault.state.withLock { state in
            let files = try #require(state.committer.formatTwo?.specialFiles)
            return (try #require(files.first { $0.role == .ownerUnlock }), try #require(files.first { $0.role == .retiredOwner }))
        }
        let names = try vault.state.withLock { (try $0.name(owner.file.number), try $0.name(former.file.number)) }
        let expected = try vault.tree()
        try vault.lock()
        try storage.rename(names.0, to: FileName.encode(owner.name))
        try storage.rename(FileName.encode(former.name), to: names.1)
        let fresh = try TestVaults.open(storage, seed: 1)
        #expect(fresh.isNew)
        try fresh.makeFile("fresh", [9])
        try fresh.lock()
        #expect(storage.snapshot[FileName.encode(former.name)] != nil)

        let viaNew = try TestVaults.open(storage, seed: 2)
        #expect(try viaNew.tree() == expected)
        try viaNew.lock()
        #expect(try Self.contents(storage, 1) == ["fresh": [9]])
        try checkStorageInvariants(storage)
    }

    /// fsck (a read-only check) in the middle of a change: the records are at either of their
    /// names, and the storage is clean.
    @Test func aCheckDuringAChangeIsClean() throws {
        let (storage, _) = try Self.cutAfterCommitPoint()
        let viaOld = try TestVaults.open(storage, seed: 1, readOnly: true)
        let report = try viaOld.check()
        #expect(report.isClean && report.storageProblems.isEmpty, "\(report.storageProblems)")
        let owner = try #require(viaOld.state.withLock { $0.committer.formatTwo?.specialFiles.first { $0.role == .ownerUnlock } })
        let deviceName = try viaOld.state.withLock { try $0.name(owner.file.number) }
        try viaOld.lock()
        try storage.rename(deviceName, to: FileName.encode(owner.name))
        let viaNew = try TestVaults.open(storage, seed: 2, readOnly: true)
        let again = try viaNew.check()
        #expect(again.isClean && again.storageProblems.isEmpty, "\(again.storageProblems)")
        try viaNew.lock()
    }
}

import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §13.9, design §G: a crash at every storage mutation of a format-1 vault's
/// upgrade commit (the process killed, the power cut, or one operation failing while the vault
/// goes on) leaves a vault that opens with nothing lost: the old tree in format 1, or the new
/// one in format 2; `fsck` finds it clean; and a further commit completes the upgrade. Run on a
/// vault made here and on the checked-in format-1 fixture.
@Suite struct FormatUpgradeCrashTests {
    typealias Crash = CrashTests.Crash

    enum Source: String, Sendable, CaseIterable { case made, fixture }

    struct Case: Sendable, CustomStringConvertible {
        var source: Source
        var crash: Crash
        var description: String { "\(source) vault, \(crash) crash" }
    }

    /// A format-1 storage, the pattern key that opens its vault, and the upgrade session's change.
    struct Start: Sendable {
        let files: [String: [UInt8]]
        let patternKey: [UInt8]
        let change: @Sendable (Vault) throws -> Void
    }

    static let made = Result {
        Start(files: try FormatUpgradeTests.formatOneStorage().snapshot, patternKey: [UInt8](repeating: 1, count: 32),
              change: { try FormatUpgradeTests.change($0) })
    }

    static let fixture = Result { () throws -> Start in
        let fixture = try Format1FixtureTests.unpack()
        defer { TestFolder.remove(fixture.folder) }
        var files: [String: [UInt8]] = [:]
        for name in try fixture.storage.listFiles() { files[name] = try fixture.storage.read(name) }
        let keyring = Keyring(backend: FileKeyringBackend(path: fixture.folder + "/keyring"), allowWeakKDF: true)
        let salt = try keyring.requiredPatternSalt()
        let pattern = try Pattern(parsing: Format1FixtureTests.pattern)
        let patternKey = try salt.kdf.deriveKey(password: pattern.secret, salt: salt.salt)
        defer { patternKey.wipe() }
        return Start(files: files, patternKey: patternKey.copyBytes(), change: { vault in
            try vault.write(try vault.id(at: "big.bin"), offset: 290_000, bytes: [5, 5, 5])
            try vault.makeFile("added", TestVaults.content(2000, seed: 8))
            try vault.remove(Array("empty".utf8), from: Vault.rootID)
        })
    }

    static func open(_ storage: any StorageFolder, _ start: Start, readOnly: Bool = false, seed: Int) throws -> Vault {
        try Vault.open(storage: storage, secrets: try VaultSecrets(patternKey: try SecretBytes(copying: start.patternKey)),
                       options: Vault.Options(readOnly: readOnly),
                       random: DeterministicRandom(seed: [UInt8](repeating: UInt8(truncatingIfNeeded: seed), count: 32)),
                       clock: ManualClock())
    }

    /// The failure of one operation (a retry by the same vault) does not depend on the vault's
    /// contents: the made vault covers it.
    static let cases = Source.allCases.flatMap { source in
        Crash.allCases.filter { source == .made || $0 != .failure }.map { Case(source: source, crash: $0) }
    }

    @Test(arguments: cases)
    func crashAtEveryMutationOfTheUpgrade(_ testCase: Case) throws {
        let start = try (testCase.source == .made ? Self.made : Self.fixture).get()
        let unlockName = try FormatTwoKeys.unlockName(locator: try VaultSecrets(patternKey: SecretBytes(copying: start.patternKey)).locator)
        let reader = try Self.open(CrashTests.storage(start.files), start, readOnly: true, seed: 1)
        let before = try reader.tree()
        try reader.lock()
        let probe = try Self.open(CrashTests.storage(start.files), start, seed: 2)
        try start.change(probe)
        let after = try probe.tree()
        try probe.lock()

        var mutations = 0, completed = false, fellBack = 0
        while !completed {
            let context = "\(testCase), crash after \(mutations) mutations"
            let storage = CrashTests.storage(start.files)
            let vault = try Self.open(storage, start, seed: 3)
            try start.change(vault)
            completed = try testCase.crash.cut(storage, afterMutations: mutations) { try vault.commit() }
            if testCase.crash == .failure { try vault.lock() }
            let opened = try Self.open(storage, start, readOnly: true, seed: 4)
            let tree = try opened.tree()
            let format = opened.formatVersion
            #expect((tree == before && format == 1) || (tree == after && format == 2),
                    "\(context): format \(format), \(treeDifference(tree, after))")
            if completed || testCase.crash == .failure { #expect(tree == after && format == 2, "\(context): the commit returned") }
            if format == 1 && storage.snapshot[unlockName] != nil { fellBack += 1 }
            try opened.lock()
            // A writable open removes what the cut commit left (§9.3: new groups' files); then
            // fsck, read-only as `dotsafe fsck` runs, finds the vault clean.
            try Self.open(storage, start, seed: 7).lock()
            try checkStorageInvariants(storage)
            let checked = try Self.open(storage, start, readOnly: true, seed: 8)
            #expect(checked.formatVersion == format)
            let report = try checked.check()
            #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems.map(\.problems))")
            try checked.lock()

            // A further commit completes the upgrade, with nothing lost.
            let again = try Self.open(storage, start, seed: 5)
            try again.makeFile("later", [4])
            try again.lock()
            let final = try Self.open(storage, start, readOnly: true, seed: 6)
            var expected = tree
            expected["later"] = .file(mode: 0o644, content: [4])
            #expect(final.formatVersion == 2, "\(context): upgraded by the next commit")
            expectSame(try final.tree(), expected, "\(context): after the next commit")
            #expect(try final.check().isClean, "\(context): fsck after the next commit")
            try final.lock()
            try checkStorageInvariants(storage)
            mutations += 1
            try #require(mutations < 1000, "the commit never completed")
        }
        // Data, the record (write, sync, rename), pages, syncs, covers, the root, its copy, refills.
        #expect(mutations > 12)
        // Cut between the record's rename and the root: the open fell back to format 1's root.
        if testCase.crash != .failure { #expect(fellBack > 0, "no cut left the record beside format-1 roots") }
    }
}

import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// `dotsafe fsck` of an index-3 vault whose derived records are wrong (docs/FORMAT.md §15.6's
/// last row), run as the built executable with the switch on: the rule's line and exit 1 with
/// nothing written; `--repair` says what it does, commits, and checks clean; every file keeps
/// its bytes. (Each rule: `IndexThreeFsckTests`.)
@Suite struct IndexThreeFsckCommandTests {
    /// The root folder's summary on the vault's one leaf, sealed again with its page key, counting
    /// one entry more; returns the right count and the leaf's file.
    static func breakRootSummary(_ fixture: FsckCommandTests.Fixture) throws -> (entries: UInt64, folders: UInt64, page: FileRef) {
        let storage = try Storage.open(at: fixture.storage)
        var options = Vault.Options(readOnly: true, cacheBytes: 8 << 20)
        options.indexThree = true
        let vault = try Vault.open(storage: storage, secrets: try fixture.secrets(), options: options)
        defer { try? vault.lock() }
        return try vault.state.withLock { state in
            #expect(state.committer.pageTable.pages.count == 1, "one leaf")
            let ref = try #require(state.committer.pageTable.pages.first?.ref)
            let name = try state.name(ref.fileNumber), arena = state.session.arena, version = IndexRootV3.envelopeVersion
            let body = try Sealer.openEnvelope(try #require(try storage.read(name)), expectedNonce: nil, kind: .indexPage, version: version,
                                               key: .arena(ref.key!, arena), seal: .indexPageV2(level: 0))
            guard case .leaf(var records) = try IndexPageV2.decode(body[...], level: 0) else { throw VaultError.wrongType }
            let i = try #require(records.firstIndex { $0.key == IndexKeyV3.folderSummary(Vault.rootID).recordKey })
            let right = try FolderSummary.decode(records[i].value)
            records[i].value = FolderSummary(entryCount: right.entryCount + 1, subfolderCount: right.subfolderCount).encode()
            let changed = IndexPageV2.encode(level: 0, .leaf(records))
            let (_, file) = try Sealer.sealEnvelope(kind: .indexPage, version: version, body: changed[...], key: .arena(ref.key!, arena),
                                                    seal: .indexPageV2(level: 0), random: SystemRandom())
            try storage.replace(name, contents: file)
            return (right.entryCount, right.subfolderCount, FileRef(raw: ref.fileNumber))
        }
    }

    @Test func aWrongSummaryIsReportedAndRepaired() throws {
        let fixture = try FsckCommandTests.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let upgraded = UpgradeCommandTests.upgrade(fixture, ["--yes"])
        try #require(upgraded.status == 0, "\(upgraded)")
        let right = try Self.breakRootSummary(fixture)
        let damaged = try fixture.snapshot()

        let line = "index 3, summary: folder 1 counts \(right.entries + 1) entries, \(right.folders) folders; its entries are \(right.entries), \(right.folders) (page \(right.page))"
        let run = UpgradeCommandTests.fsck(fixture)
        #expect(run.status == 1, "\(run)")
        #expect(run.output.split(separator: "\n").map(String.init).contains(line), "\(run)")
        #expect(run.output.hasSuffix(": 0 damaged items, 0 storage problems, 1 index problems.\n"), "\(run)")
        #expect(try fixture.snapshot() == damaged, "fsck without --repair wrote")

        let repair = UpgradeCommandTests.run(["fsck", fixture.storage, "--pattern", UpgradeCommandTests.pattern, "--repair"], fixture.environment)
        #expect(repair.status == 0, "\(repair)")
        for expected in ["Repair of the index keeps every item:", "  index 3's derived records: written again from the items",
                         "Repaired and committed (generation "] {
            #expect(repair.output.contains(expected), "\(expected)\n\(repair)")
        }
        #expect(!repair.output.contains("Repair drops"), "\(repair)")
        #expect(repair.output.hasSuffix(": clean.\n"), "\(repair)")

        let again = UpgradeCommandTests.fsck(fixture)
        #expect(again.status == 0 && again.output.hasSuffix(": clean.\n"), "\(again)")
        let found = try UpgradeCommandTests.look(fixture)
        #expect(found.version == 3 && found.contents == fixture.contents)
    }
}

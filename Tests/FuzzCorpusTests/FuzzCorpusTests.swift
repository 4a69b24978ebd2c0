import Foundation
import FuzzTargets
import Testing
import VaultCore
import VaultFormat

/// Replays the committed fuzz corpus (Tests/FuzzCorpus/<target>/: seeds and every finding)
/// through the same functions the fuzzer calls: none may trap.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzCorpus")

    @Test(arguments: FuzzTarget.all.map(\.name))
    func replay(target name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let folder = Self.corpus.appendingPathComponent(name)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!files.isEmpty, "no corpus for \(name)")
        for file in files {
            target.run(Array(try Data(contentsOf: folder.appendingPathComponent(file))))
        }
    }

    /// Every folder of the corpus belongs to a target, so that a renamed target keeps its corpus.
    @Test func everyFolderIsATarget() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
        #expect(Set(folders) == Set(FuzzTarget.all.map(\.name)))
    }

    /// The valid seeds of the whole-index target pass the loader's checks, so that fuzzing
    /// starts from inputs that reach every rule.
    @Test func indexSeedsAreAccepted() throws {
        for name in ["one-page", "two-pages", "root-only"] {
            var reader = ByteReader(FuzzSeeds.all()["index"]![name]!, context: "seed")
            var bodies: [[UInt8]] = []
            while !reader.isAtEnd { bodies.append(try reader.lp32()) }
            try IndexCheck.check(root: FuzzTarget.indexFuzzRoot(pageCount: bodies.count), pageBodies: bodies)
        }
    }

    /// The index-3 seeds pass every rule a page can check, under the fuzz root: fuzzing starts
    /// from pages that reach each record kind's decoder.
    @Test func indexThreeSeedsAreAccepted() throws {
        let seeds = FuzzSeeds.all()
        let root = FuzzTarget.indexThreeFuzzRoot, hash = FuzzTarget.indexThreeFuzzHash
        #expect(try IndexRootV3.decode(#require(seeds["index-root-v3"]?["valid"])[...]) == root)
        guard case .leaf(let records) = try IndexPageV3.decode(#require(seeds["index-page-v3"]?["leaf"])[...], level: 0, root: root,
                                                                 entryHash: { try hash($0) }) else { Issue.record("not a leaf"); return }
        #expect(records.count == 5)
        guard case .interior(let refs) = try IndexPageV3.decode(#require(seeds["index-page-v3"]?["interior"])[...], level: 1, root: root,
                                                                  entryHash: { try hash($0) }) else { Issue.record("not interior"); return }
        #expect(refs.count == 2)
    }

    /// The seeds are what the encoders make today: the committed ones must still decode.
    @Test func seedsAreCommitted() throws {
        for (target, seeds) in FuzzSeeds.all() {
            for (name, bytes) in seeds {
                let committed = try Data(contentsOf: Self.corpus.appendingPathComponent(target).appendingPathComponent(name))
                #expect(Array(committed) == bytes, "\(target)/\(name) differs from FuzzSeeds")
            }
        }
    }
}

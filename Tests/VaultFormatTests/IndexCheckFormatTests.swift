import Testing
import VaultCore
import VaultFormat

/// docs/FORMAT.md §5.2 and §6.1: the MUST-reject rules that span records and pages, checked as
/// opening a vault checks them after decrypting its pages (`IndexCheck`), each with its own error.
@Suite struct IndexCheckFormatTests {
    static let P = UInt64(Format.payloadSize)
    static func nonce(_ n: UInt8) -> [UInt8] { Array(repeating: n, count: Format.sealNonceSize) }
    static func link(_ parent: UInt64, _ name: String) -> ItemRecord.Link { .init(parentID: parent, name: Array(name.utf8)) }
    static func folder(_ links: [ItemRecord.Link]) -> ItemRecord {
        ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, links: links)
    }
    static func file(_ links: [ItemRecord.Link], size: UInt64, layout: ItemRecord.Layout) -> ItemRecord {
        ItemRecord(type: .file, mode: 0o644, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, size: size, links: links,
                   itemKey: Array(repeating: 1, count: 32), layout: layout)
    }
    static func segment(_ entries: [(Int, UInt64)]) -> [UInt8] {
        ChunkSegment.encode(entries.map { ChunkSegment.Entry(indexInSegment: $0.0, ref: SealedRef(fileNumber: $0.1, nonce: nonce(UInt8($0.0)))) })
    }

    /// A valid index: the root folder, folder 2 "d" in it, file 3 "f" in d with two chunks (files
    /// 6 and 7), file 4 "p" packed in file 8. Groups 0 and 1 owned; slots 0, 1; covers 2, 3.
    struct Index {
        typealias T = IndexCheckFormatTests
        var records: [RecordKey: [UInt8]] = [
            .item(1): T.folder([]).encode(),
            .item(2): T.folder([T.link(1, "d")]).encode(),
            .item(3): T.file([T.link(2, "f")], size: 2 * T.P, layout: .chunked).encode(),
            .segment(3, 0): T.segment([(0, 6), (1, 7)]),
            .item(4): T.file([T.link(1, "p")], size: 10,
                             layout: .packed(.init(fileNumber: 8, offset: 0, sealedLength: 26, nonce: T.nonce(8)))).encode(),
        ]
        /// Keys at which a new page starts (the first page always does).
        var pageStarts: [RecordKey] = [.item(3)]
        var pageFiles: [UInt64] = [4, 5]

        func check() throws {
            let keys = records.keys.sorted()
            var pages: [[(key: RecordKey, value: [UInt8])]] = []
            for key in keys {
                if pages.isEmpty || pageStarts.contains(key) { pages.append([]) }
                pages[pages.count - 1].append((key, records[key]!))
            }
            try check(pages)
        }

        func check(_ pages: [[(key: RecordKey, value: [UInt8])]]) throws {
            let root = IndexRoot(generation: 1, vaultKey: Array(repeating: 0, count: 32), nextFileNumber: 32, nextItemID: 10,
                                 coverCount: 2, ownedGroups: [GroupRange(first: 0, count: 2)], releasing: [],
                                 pages: pages.indices.map { SealedRef(fileNumber: pageFiles[$0], nonce: T.nonce(UInt8($0))) })
            try IndexCheck.check(root: root, pageBodies: pages.map(IndexPage.encode))
        }
    }

    @Test func theValidIndexPasses() throws {
        try Index().check()
    }

    enum Rule: String, CaseIterable, Sendable {
        case pagesOutOfOrder, valueDoesNotDecode, segmentDoesNotDecode, parentNotAFolder, foldersInACycle, folderItsOwnParent
        case nameTwiceInAFolder, folderWithTwoNames, itemWithoutName, rootFolderMissing, itemBeyondNextItemID
        case chunkBeyondSize, segmentOfAPackedFile, fileNumberUsedTwice, chunkInASlot, chunkInACover, chunkOutsideTheGroups
        case pageInAChunksFile
    }

    @Test(arguments: Rule.allCases)
    func mustReject(_ rule: Rule) throws {
        var index = Index()
        var expected: any Error = VaultError.damagedIndex("")
        func damaged(_ text: String) { expected = VaultError.damagedIndex(text) }
        switch rule {
        case .pagesOutOfOrder:
            let keys = index.records.keys.sorted()
            let first = keys.filter { $0 < .item(3) }.map { ($0, index.records[$0]!) }
            let second = keys.filter { $0 >= .item(3) }.map { ($0, index.records[$0]!) }
            #expect(throws: VaultError.damagedIndex("index pages out of order")) {
                try index.check([second.map { (key: $0.0, value: $0.1) }, first.map { (key: $0.0, value: $0.1) }])
            }
            return
        case .valueDoesNotDecode: index.records[.item(4)]!.removeLast(); expected = FormatError.truncated("item record")
        case .segmentDoesNotDecode: index.records[.segment(3, 0)] = [0, 0]; expected = FormatError.invalid("chunk segment count 0")
        case .parentNotAFolder: index.records[.item(5)] = Self.folder([Self.link(3, "x")]).encode(); damaged("item 5 is in 3, not a folder")
        case .foldersInACycle:
            index.records[.item(5)] = Self.folder([Self.link(6, "x")]).encode()
            index.records[.item(6)] = Self.folder([Self.link(5, "y")]).encode()
            damaged("items not reachable from the root folder")
        case .folderItsOwnParent: index.records[.item(5)] = Self.folder([Self.link(5, "x")]).encode(); damaged("items not reachable from the root folder")
        case .nameTwiceInAFolder: index.records[.item(5)] = Self.folder([Self.link(1, "p")]).encode(); damaged("a name appears twice in folder 1")
        case .folderWithTwoNames: index.records[.item(2)] = Self.folder([Self.link(1, "d"), Self.link(1, "e")]).encode(); damaged("folder 2 has 2 names")
        case .itemWithoutName: index.records[.item(5)] = Self.folder([]).encode(); damaged("item 5 has no name")
        case .rootFolderMissing: index.records[.item(1)] = Self.folder([Self.link(2, "up")]).encode(); damaged("the root folder is missing or malformed")
        case .itemBeyondNextItemID: index.records[.item(10)] = Self.folder([Self.link(1, "x")]).encode(); damaged("item 10 beyond nextItemID")
        case .chunkBeyondSize: index.records[.segment(3, 0)] = Self.segment([(0, 6), (2, 7)]); damaged("chunk 2 beyond the size of item 3")
        case .segmentOfAPackedFile: index.records[.segment(4, 0)] = Self.segment([(0, 9)]); damaged("chunk map of item 4, which is not a chunked file")
        case .fileNumberUsedTwice: index.records[.segment(3, 0)] = Self.segment([(0, 6), (1, 8)]); damaged("file 8 used twice")
        case .chunkInASlot: index.records[.segment(3, 0)] = Self.segment([(0, 1)]); damaged("chunk in file 1, which is not the vault's")
        case .chunkInACover: index.records[.segment(3, 0)] = Self.segment([(0, 3)]); damaged("chunk in file 3, which is not the vault's")
        case .chunkOutsideTheGroups: index.records[.segment(3, 0)] = Self.segment([(0, 40)]); damaged("chunk in file 40, which is not the vault's")
        case .pageInAChunksFile: index.pageFiles = [4, 6]; damaged("file 6 used twice")
        }
        do {
            try index.check()
            Issue.record("accepted: \(rule)")
        } catch {
            #expect("\(error)" == "\(expected)")
            #expect(type(of: error) == type(of: expected))
        }
    }
}

import Testing
import VaultFormat

/// docs/FORMAT.md §5.1: the index root round-trips, and each MUST-reject rule is refused with its
/// own error.
@Suite struct IndexRootFormatTests {
    /// Groups 0, 1 and 3 owned (files 0 … 31 and 48 … 63); three covers (files 2, 3, 4).
    static func valid() -> IndexRoot {
        IndexRoot(generation: 9, vaultKey: Array(0..<32), nextFileNumber: 64, nextItemID: 40, coverCount: 3,
                  ownedGroups: [GroupRange(first: 0, count: 2), GroupRange(first: 3, count: 1)], releasing: [32, 33],
                  pages: [SealedRef(fileNumber: 5, nonce: Array(repeating: 1, count: 24)),
                          SealedRef(fileNumber: 50, nonce: Array(repeating: 2, count: 24))])
    }

    @Test func roundTrips() throws {
        let root = Self.valid()
        let read = try IndexRoot.decode(root.encode()[...])
        #expect(read.encode() == root.encode())
        #expect(read.generation == 9 && read.vaultKey == Array(0..<32) && read.nextFileNumber == 64 && read.nextItemID == 40)
        #expect(read.coverCount == 3 && read.ownedGroups == root.ownedGroups && read.releasing == [32, 33] && read.pages == root.pages)
        #expect(read.owns(63) && !read.owns(32) && !read.owns(64))
    }

    enum Rule: String, CaseIterable, Sendable {
        case groupZeroNotOwned, noGroups, groupsOverlap, groupsUnsorted, groupsAdjacent, emptyGroup, groupsReachNextFileNumber
        case tooFewCovers, tooManyCovers, pageTwice, pageInSlot0, pageInSlot1, pageInCover, pageOutsideGroups
        case bytesLeftOver, generationZero, nextFileNumberNotAGroup, nextItemIDAtRoot, releasingOwnedFile, truncated
    }

    @Test(arguments: Rule.allCases)
    func mustReject(_ rule: Rule) throws {
        var root = Self.valid()
        var extra: [UInt8] = []
        var cut = 0
        let groups = FormatError.invalid("index root owned groups")
        let expected: FormatError
        func page(_ number: UInt64) -> SealedRef { SealedRef(fileNumber: number, nonce: Array(repeating: 9, count: 24)) }
        switch rule {
        case .groupZeroNotOwned: root.ownedGroups = [GroupRange(first: 1, count: 3)]; expected = .invalid("index root: group 0 not owned")
        case .noGroups: root.ownedGroups = []; expected = .invalid("index root: group 0 not owned")
        case .groupsOverlap: root.ownedGroups = [GroupRange(first: 0, count: 2), GroupRange(first: 1, count: 2)]; expected = groups
        case .groupsUnsorted: root.ownedGroups = [GroupRange(first: 0, count: 1), GroupRange(first: 3, count: 1), GroupRange(first: 2, count: 1)]
            expected = groups
        case .groupsAdjacent: root.ownedGroups = [GroupRange(first: 0, count: 1), GroupRange(first: 1, count: 1)]; expected = groups
        case .emptyGroup: root.ownedGroups.append(GroupRange(first: 5, count: 0)); root.nextFileNumber = 96; expected = groups
        case .groupsReachNextFileNumber: root.nextFileNumber = 48; expected = .invalid("index root: groups beyond nextFileNumber")
        case .tooFewCovers: root.coverCount = 1; expected = .invalid("index root cover count 1")
        case .tooManyCovers: root.coverCount = 7; expected = .invalid("index root cover count 7")
        case .pageTwice: root.pages.append(page(50)); expected = .invalid("index root: page in file 50")
        case .pageInSlot0: root.pages = [page(0)]; expected = .invalid("index root: page in file 0")
        case .pageInSlot1: root.pages = [page(1)]; expected = .invalid("index root: page in file 1")
        case .pageInCover: root.pages = [page(4)]; expected = .invalid("index root: page in file 4")
        case .pageOutsideGroups: root.pages = [page(40)]; expected = .invalid("index root: page in file 40")
        case .bytesLeftOver: extra = [0]; expected = .invalid("index root: 1 bytes left over")
        case .generationZero: root.generation = 0; expected = .invalid("index root generation 0")
        case .nextFileNumberNotAGroup: root.nextFileNumber = 65; expected = .invalid("index root nextFileNumber")
        case .nextItemIDAtRoot: root.nextItemID = 1; expected = .invalid("index root nextItemID")
        case .releasingOwnedFile: root.releasing = [20]; expected = .invalid("index root: releasing owned file 20")
        case .truncated: cut = 1; expected = .truncated("index root pages")
        }
        let body = root.encode().dropLast(cut) + extra
        #expect(throws: expected) { try IndexRoot.decode(Array(body)[...]) }
    }

    /// Counts that promise more than the body holds fail before anything is allocated for them.
    @Test func hugeCountsAreTruncationNotAllocation() throws {
        var body = Self.valid().encode()
        let groupCountOffset = 8 + 32 + 8 + 8 + 1
        body.replaceSubrange(groupCountOffset..<groupCountOffset + 4, with: [0xff, 0xff, 0xff, 0xff])
        #expect(throws: FormatError.truncated("index root groups")) { try IndexRoot.decode(body[...]) }
    }

    /// A device's group file numbers (§3): group g is 16g ..< 16g + 16; device 0's index slots
    /// (0 and 1) are no group file, another device's numbers 0 and 1 are.
    @Test func groupFileNumbers() {
        let groups = [GroupRange(first: 0, count: 2), GroupRange(first: 3, count: 1)]
        #expect(groups[1].fileNumbers == 48..<64)
        #expect(Array(groups.fileNumbers(ofDevice: 0)) == Array(2..<32) + Array(48..<64))
        #expect(Array(groups.fileNumbers(ofDevice: 1)) == Array(0..<32) + Array(48..<64))
        #expect(groups.holds(0) && groups.holds(31) && groups.holds(48) && groups.holds(63))
        #expect(!groups.holds(32) && !groups.holds(47) && !groups.holds(64))
    }
}

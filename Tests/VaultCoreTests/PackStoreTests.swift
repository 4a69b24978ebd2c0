import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// Packs alone: where members go, when a pack is free again, which packs are compacted.
@Suite struct PackStoreTests {
    static func member(_ placed: (fileNumber: UInt64, offset: Int), _ bytes: [UInt8]) -> ItemRecord.Member {
        ItemRecord.Member(fileNumber: placed.fileNumber, offset: UInt32(placed.offset), sealedLength: UInt32(bytes.count),
                          nonce: [UInt8](repeating: 9, count: Format.sealNonceSize))
    }

    /// Every pack is this device's (format 1, or a test of one device).
    static let anyDevice: @Sendable (UInt64) -> Bool = { _ in true }
    static let members = ([UInt8](repeating: 1, count: 1000), [UInt8](repeating: 2, count: 1000))

    /// `members` for items 10 and 11, placed one after the other.
    static func placeTwo(_ packs: inout PackStore, _ writer: inout FileWriter) throws
        -> (first: (fileNumber: UInt64, offset: Int), second: (fileNumber: UInt64, offset: Int)) {
        let first = try packs.place(members.0, writer: &writer)
        packs.addMember(10, member(first, members.0))
        let second = try packs.place(members.1, writer: &writer)
        packs.addMember(11, member(second, members.1))
        return (first, second)
    }

    @Test func membersFillTheOpenPackThenANewOne() throws {
        var (writer, storage) = try FileWriterTests.writer()
        var packs = PackStore()
        let (a, b) = Self.members
        let (first, second) = try Self.placeTwo(&packs, &writer)
        #expect(first.offset == 0 && second.offset == 1000 && second.fileNumber == first.fileNumber)
        #expect(packs.unwrittenBytes(Self.member(second, b)) == b, "readable before the commit")
        #expect(storage.snapshot.isEmpty, "a new pack is written whole, at the commit")
        try packs.writeOpenPack(writer: &writer)
        #expect(packs.unwrittenBytes(Self.member(second, b)) == nil)
        #expect(try storage.read(try writer.name(first.fileNumber), offset: 1000, count: 1000) == b)

        let large = [UInt8](repeating: 3, count: Format.fileSize - 1999)
        let third = try packs.place(large, writer: &writer)
        #expect(third.fileNumber != first.fileNumber && third.offset == 0, "what does not fit opens a new pack")
        packs.addMember(12, Self.member(third, large))
        let freed = [packs.releaseMember(10, Self.member(first, a)), packs.releaseMember(11, Self.member(second, b)),
                     packs.releaseMember(12, Self.member(third, large))]
        #expect(freed == [nil, first.fileNumber, nil], "an empty pack is free again, unless it is the open pack")
    }

    /// A session starts with no open pack; the pack that lost members has the most free tail.
    /// Compacting it must not make it the open pack: its members would move into its own tail
    /// under the same keys (what SEED=21220 of tools/sync-crash-trials found after a merge).
    @Test func compactionNeverMovesMembersIntoThePackItEmpties() throws {
        var (writer, _) = try FileWriterTests.writer()
        var written = PackStore()
        let (a, b) = Self.members
        let (first, second) = try Self.placeTwo(&written, &writer)
        try written.writeOpenPack(writer: &writer)
        var packs = PackStore(packs: written.packs)
        _ = packs.releaseMember(11, Self.member(second, b))
        #expect(packs.sparsePacks(own: Self.anyDevice) == [first.fileNumber])
        // No other pack: compaction waits rather than take a free file (or a new group) for it,
        // and can tell before it reads the pack.
        #expect(!packs.hasRoom(for: a.count, avoiding: first.fileNumber, writer: writer))
        #expect(throws: CompactionWaits.self) { try packs.place(a, writer: &writer, avoiding: first.fileNumber) }
        // Another pack with room takes the member.
        let large = [UInt8](repeating: 3, count: Format.fileSize - a.count)   // too big for the first pack
        let big = try written.place(large, writer: &writer)
        written.addMember(12, Self.member(big, large))
        try written.writeOpenPack(writer: &writer)
        var two = PackStore(packs: written.packs)
        _ = two.releaseMember(11, Self.member(second, b))
        #expect(two.hasRoom(for: a.count, avoiding: first.fileNumber, writer: writer))
        #expect(!two.hasRoom(for: Format.fileSize, avoiding: first.fileNumber, writer: writer), "no pack holds a whole file more")
        let moved = try two.place(a, writer: &writer, avoiding: first.fileNumber)
        #expect(moved.fileNumber == big.fileNumber && moved.fileNumber != first.fileNumber, "another pack takes the member")
        var other = PackStore(packs: written.packs)
        _ = other.releaseMember(11, Self.member(second, b))
        #expect(try other.place(a, writer: &writer).fileNumber == first.fileNumber, "without it, the emptied pack is chosen")
    }

    @Test func packsThatLostMembersAreCompactedUntilTheCommitForgetsThem() throws {
        var (writer, _) = try FileWriterTests.writer()
        var packs = PackStore()
        let (a, b) = Self.members
        let (first, second) = try Self.placeTwo(&packs, &writer)
        try packs.writeOpenPack(writer: &writer)
        #expect(packs.sparsePacks(own: Self.anyDevice).isEmpty, "the open pack is never compacted")
        // Another pack becomes the open one; the first lost its second member.
        _ = try packs.place([UInt8](repeating: 3, count: Format.fileSize - 1500), writer: &writer)
        _ = packs.releaseMember(11, Self.member(second, b))
        #expect(packs.sparsePacks(own: Self.anyDevice) == [first.fileNumber])
        // Another device's pack is that device's to compact (FORMAT.md §7.2).
        #expect(packs.sparsePacks { $0 != first.fileNumber }.isEmpty, "no pack of another device")
        #expect(packs.members(of: first.fileNumber) == [10])
        // After a commit the pack reserves only what its members use: nothing to compact.
        packs.didCommit { $0 == 10 ? Self.member(first, a) : nil }
        #expect(packs.packs[first.fileNumber]?.reservedEnd == 1000)
        #expect(packs.sparsePacks(own: Self.anyDevice).isEmpty)
    }

    /// A commit moves the reserved end of the packs that gained or lost a member (or reserved
    /// one, after a merge) since the last, asking for their members only; the others keep theirs.
    @Test func aCommitMovesTheEndsOfThePacksThatChanged() throws {
        let member = { (pack: UInt64, offset: Int) in Self.member((pack, offset), [UInt8](repeating: 1, count: 1000)) }
        var packs = PackStore(packs: [4: PackInfo(liveBytes: 2000, members: [1, 2], reservedEnd: 9000),
                                      5: PackInfo(liveBytes: 1000, members: [3], reservedEnd: 1000)])
        var now: [UInt64: ItemRecord.Member] = [1: member(4, 0), 2: member(4, 1000), 3: member(5, 0)]
        var asked: [UInt64] = []
        func commit() {
            asked = []
            packs.didCommit { id in asked.append(id); return now[id] }
        }
        commit()
        #expect(asked.sorted() == [1, 2, 3], "the first commit asks for every member: ends read from records")
        #expect(packs.packs[4]?.reservedEnd == 2000 && packs.packs[5]?.reservedEnd == 1000)
        commit()
        #expect(asked.isEmpty, "no pack changed")
        _ = packs.releaseMember(2, member(4, 1000))
        now[2] = nil
        commit()
        #expect(asked == [1] && packs.packs[4]?.reservedEnd == 1000, "pack 4 lost its member at 1000: \(asked)")
        #expect(packs.packs[5]?.reservedEnd == 1000)
        // A merge keeps bytes the committed root references until the next commit.
        packs.reserve(member(5, 5000))
        #expect(packs.packs[5]?.reservedEnd == 6000)
        commit()
        #expect(asked == [3] && packs.packs[5]?.reservedEnd == 1000, "the reservation ends with the commit: \(asked)")
    }

    /// §7.2 "Placing members": among existing packs that fit, the most free tail, the lowest
    /// number on a tie, never a pack whose file is not there.
    @Test func anExistingPackIsChosenByItsFreeTail() throws {
        var (writer, storage) = try FileWriterTests.writer()
        let numbers = try (0..<3).map { _ in try writer.store([UInt8](repeating: 0, count: Format.fileSize)) }
        #expect(numbers == [4, 5, 6])
        func packs(_ ends: [UInt64: Int]) -> PackStore {
            PackStore(packs: ends.mapValues { PackInfo(liveBytes: $0, members: [1], reservedEnd: $0) })
        }
        let member = [UInt8](repeating: 5, count: 1000)
        var store = packs([4: 100_000, 5: 50_000, 6: 50_000])
        let placed = try store.place(member, writer: &writer)
        #expect(placed.fileNumber == 5 && placed.offset == 50_000)
        try storage.remove(try writer.name(5))
        try storage.remove(try writer.name(6))
        store = packs([4: 100_000, 5: 50_000, 6: 50_000])
        let skipping = try store.place(member, writer: &writer)
        #expect(skipping.fileNumber == 4 && skipping.offset == 100_000, "a missing pack takes no new members")
        store = packs([4: Format.fileSize - 999])
        let fresh = try store.place(member, writer: &writer)
        #expect(fresh.fileNumber == 7 && fresh.offset == 0, "no pack fits: a new one in the lowest free file")
    }
}

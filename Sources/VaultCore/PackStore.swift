import VaultFormat

/// The packs of small files (docs/FORMAT.md §7.2): which items have a member in which pack, the
/// space each pack must keep, and the open pack that takes new members. Members are placed
/// after the end a pack reserves, so nothing the committed root references is overwritten.
///
/// Invariants: a pack with no members left is freed, unless it is the open pack; `reservedEnd`
/// covers every member the committed root references until the next commit.
struct PackStore {
    private(set) var packs: [UInt64: PackInfo]
    private(set) var openPack: OpenPack?

    /// Packs holding less than this are emptied into the open pack at a commit.
    static let compactionThreshold = Format.fileSize / 4
    /// Packs emptied at one commit, at most.
    static let compactionsPerCommit = 8

    init(packs: [UInt64: PackInfo] = [:]) { self.packs = packs }

    mutating func addMember(_ id: UInt64, _ member: ItemRecord.Member) {
        let end = Int(member.offset) + Int(member.sealedLength)
        packs[member.fileNumber, default: PackInfo()].liveBytes += Int(member.sealedLength)
        packs[member.fileNumber]!.members.insert(id)
        packs[member.fileNumber]!.reservedEnd = max(packs[member.fileNumber]!.reservedEnd, end)
    }

    /// Keeps the bytes of a member that the committed root references (sync's merged state may
    /// no longer hold it): nothing is placed below its end until the next commit.
    mutating func reserve(_ member: ItemRecord.Member) {
        guard let info = packs[member.fileNumber] else { return }
        packs[member.fileNumber]!.reservedEnd = max(info.reservedEnd, Int(member.offset) + Int(member.sealedLength))
    }

    /// Removes a member; returns the pack's file number when that left it empty (free again).
    mutating func releaseMember(_ id: UInt64, _ member: ItemRecord.Member) -> UInt64? {
        guard packs[member.fileNumber] != nil else { return nil }
        packs[member.fileNumber]!.liveBytes -= Int(member.sealedLength)
        packs[member.fileNumber]!.members.remove(id)
        guard packs[member.fileNumber]!.members.isEmpty && openPack?.fileNumber != member.fileNumber else { return nil }
        packs[member.fileNumber] = nil
        return member.fileNumber
    }

    /// A member's sealed bytes that are in the open pack and not yet on disk.
    func unwrittenBytes(_ member: ItemRecord.Member) -> [UInt8]? {
        guard let openPack, openPack.fileNumber == member.fileNumber else { return nil }
        return openPack.unwrittenBytes(offset: Int(member.offset), count: Int(member.sealedLength))
    }

    /// Puts sealed member bytes into the open pack, starting a new pack when it is full.
    /// `avoiding`: a pack being emptied by compaction, which must not become the open pack (its
    /// members would move into its own tail, under the same keys, and gain nothing). Compaction
    /// only fills packs that exist: a new pack for it would take a free file, or a new group,
    /// for housekeeping (`CompactionWaits`).
    mutating func place(_ sealed: [UInt8], writer: inout FileWriter, avoiding: UInt64? = nil) throws -> (fileNumber: UInt64, offset: Int) {
        if let pack = openPack, !pack.fits(sealed.count) {
            try writeOpenPack(writer: &writer)
            openPack = nil
        }
        if openPack == nil { openPack = try chooseOpenPack(needing: sealed.count, avoiding: avoiding, writer: &writer) }
        let offset = openPack!.append(sealed)
        return (openPack!.fileNumber, offset)
    }

    /// Whether compaction could place a member of `count` bytes out of the pack `emptied`: the
    /// open pack has room, or another pack of this device does (`place` then takes it). Asked
    /// before a pack's members are read, so that a commit with nowhere to move them reads none.
    func hasRoom(for count: Int, avoiding emptied: UInt64, writer: FileWriter) -> Bool {
        if let openPack, openPack.fileNumber != emptied, openPack.fits(count) { return true }
        return candidates(needing: count, avoiding: emptied, writer: writer).contains { writer.isUsable($0.key) }
    }

    /// Packs of this device other than `avoiding` with room for `count` bytes after the end they
    /// reserve, the most free tail first (lowest number on a tie).
    private func candidates(needing count: Int, avoiding: UInt64?, writer: FileWriter) -> [(key: UInt64, value: PackInfo)] {
        // Only this device's packs take members: another device's files are never written.
        packs.filter { Format.fileSize - $0.value.reservedEnd >= count && writer.allocator.isOwnDevice($0.key) && $0.key != avoiding }
            .sorted { ($0.value.reservedEnd, $0.key) < ($1.value.reservedEnd, $1.key) }
    }

    /// The existing pack with the most free tail that fits (lowest number on a tie), or a new one.
    private mutating func chooseOpenPack(needing count: Int, avoiding: UInt64?, writer: inout FileWriter) throws -> OpenPack {
        // A pack file that is missing or of the wrong size takes no new members: writing them
        // would fail every commit from now on. Its own items report the damage when read.
        for (number, info) in candidates(needing: count, avoiding: avoiding, writer: writer) where writer.isUsable(number) {
            return OpenPack(existing: number, reservedEnd: info.reservedEnd)
        }
        if avoiding != nil { throw CompactionWaits() }
        let number = try writer.allocateUsable(data: true)
        packs[number] = PackInfo()
        return OpenPack(newFile: number, randomImage: try writer.random.bytes(Format.fileSize))
    }

    /// Writes the open pack's new bytes: the whole image for a new pack, the new members otherwise.
    mutating func writeOpenPack(writer: inout FileWriter) throws {
        guard var pack = openPack, pack.hasPendingWrites else { return }
        if pack.image != nil, packs[pack.fileNumber]?.members.isEmpty ?? true {
            // A new pack whose members all went before it was written (a file deleted after its
            // write failed on a full disk): nothing to write, and the file is free again.
            packs[pack.fileNumber] = nil
            writer.release(pack.fileNumber)
            openPack = nil
            return
        }
        if let image = pack.image {
            try writer.storeFile(pack.fileNumber, image)
        } else {
            for write in pack.pending { try writer.write(pack.fileNumber, offset: write.offset, bytes: write.bytes) }
        }
        pack.didWrite()
        openPack = pack
    }

    /// Packs to empty into the open pack at this commit, lowest first: only packs that lost
    /// members (live bytes below the end they reserve), since a pack that is merely small would
    /// move into a new pack at every session.
    var sparsePacks: [UInt64] {
        packs.filter { $0.value.liveBytes > 0 && $0.value.liveBytes < Self.compactionThreshold
                       && $0.value.liveBytes < $0.value.reservedEnd
                       && $0.key != openPack?.fileNumber }.map(\.key).sorted().prefix(Self.compactionsPerCommit).map { $0 }
    }

    /// The members of a pack, by item, in item order.
    func members(of number: UInt64) -> [UInt64] { packs[number]?.members.sorted() ?? [] }

    func isOpen(_ number: UInt64) -> Bool { openPack?.fileNumber == number }

    /// After a commit: each pack reserves only what the new root references (`member` gives an
    /// item's member), and the open pack continues on disk.
    mutating func didCommit(member: (UInt64) -> ItemRecord.Member?) {
        for (number, info) in packs {
            packs[number]!.reservedEnd = info.members.reduce(0) { end, id in
                guard let member = member(id) else { return end }
                return max(end, Int(member.offset) + Int(member.sealedLength))
            }
        }
        if let pack = openPack { openPack = OpenPack(existing: pack.fileNumber, reservedEnd: packs[pack.fileNumber]?.reservedEnd ?? 0) }
    }

    /// Erases plaintext of members not yet written (R-MEM-3).
    mutating func wipe() {
        openPack?.wipe()
        openPack = nil
    }
}

/// No other pack has room for a compacted member: compaction waits for a later commit.
struct CompactionWaits: Error {}

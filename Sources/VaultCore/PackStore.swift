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
    /// Own packs that a published remote root references (pinned, FORMAT.md §13.11), with the
    /// end of their members there: no new member goes below it, though the local roots may no
    /// longer reference what lies there (another device may still read it from that root).
    private var pinnedEnds: [UInt64: Int] = [:]
    /// Those of the remote root a sync is about to publish, which replace them once it is up.
    private var publishingEnds: [UInt64: Int] = [:]
    /// Packs whose members or reserved end changed since the last commit: only their ends move
    /// at the next (every pack's at the first, whatever the ends were read as).
    private var changedSinceCommit: Set<UInt64>
    /// Packs whose members are not known yet (index 3 held in part: from the pack entries, not
    /// the lists), with the members released since; `members` holds those added since.
    /// `knowMembers` completes them from the pack's list.
    private var unlisted: [UInt64: Set<UInt64>] = [:]

    /// Packs holding less than this are emptied into the open pack at a commit.
    static let compactionThreshold = Format.fileSize / 4
    /// Packs emptied at one commit, at most.
    static let compactionsPerCommit = 8

    /// `endsFromMembers`: whether each pack's end is still to be counted from its members at
    /// the first commit (ends read from the references); index 3's pack entries record it.
    /// `unlisted`: packs whose members are not in `packs` (their entries' only).
    init(packs: [UInt64: PackInfo] = [:], endsFromMembers: Bool = true, unlisted: Set<UInt64> = []) {
        self.packs = packs
        changedSinceCommit = endsFromMembers ? Set(packs.keys) : []
        for number in unlisted { self.unlisted[number] = [] }
    }

    /// Whether a pack's members must be read from its list before they are asked for.
    func needsMembers(_ number: UInt64) -> Bool { unlisted[number] != nil }

    /// A pack's members from its list as committed: those released since go, those added stay.
    mutating func knowMembers(_ number: UInt64, listed: [UInt64]) {
        guard let released = unlisted.removeValue(forKey: number), packs[number] != nil else { return }
        packs[number]!.members = Set(listed).subtracting(released).union(packs[number]!.members)
    }

    /// Packs whose members or reserved end changed since the last commit.
    var changedPacks: Set<UInt64> { changedSinceCommit }

    mutating func addMember(_ id: UInt64, _ member: ItemRecord.Member) {
        let end = Int(member.offset) + Int(member.sealedLength)
        packs[member.fileNumber, default: PackInfo()].liveBytes += Int(member.sealedLength)
        packs[member.fileNumber]!.members.insert(id)
        packs[member.fileNumber]!.reservedEnd = max(packs[member.fileNumber]!.reservedEnd, end)
        changedSinceCommit.insert(member.fileNumber)
    }

    /// Keeps the bytes of a member that the committed root references (sync's merged state may
    /// no longer hold it): nothing is placed below its end until the next commit.
    mutating func reserve(_ member: ItemRecord.Member) {
        guard let info = packs[member.fileNumber] else { return }
        packs[member.fileNumber]!.reservedEnd = max(info.reservedEnd, Int(member.offset) + Int(member.sealedLength))
        changedSinceCommit.insert(member.fileNumber)
    }

    /// Where new members of a pack may start: after what the local roots and the state reserve,
    /// and after what the published remote root references.
    private func placementEnd(_ number: UInt64) -> Int {
        max(packs[number]?.reservedEnd ?? 0, pinnedEnds[number] ?? 0)
    }

    /// Right after a sync's commit, the files of the remote root it will publish (the state
    /// just committed): their members there end at each pack's reserved end. Until that root is
    /// up the ends of the one before hold too. `read`: the own files of the remote root the sync
    /// read, which stay pinned after (a racing root may come from it): their ends as pinned now
    /// (that root references own members only as this device's published roots did), or the
    /// whole pack when none is known.
    mutating func pin(_ numbers: Set<UInt64>, keeping read: Set<UInt64> = []) {
        publishingEnds = [:]
        for number in numbers { if let info = packs[number] { publishingEnds[number] = info.reservedEnd } }
        for number in read where packs[number] != nil || pinnedEnds[number] != nil {
            publishingEnds[number] = max(publishingEnds[number] ?? 0, pinnedEnds[number] ?? Format.fileSize)
        }
        pinnedEnds.merge(publishingEnds) { max($0, $1) }
    }

    /// That remote root is up: only its ends hold.
    mutating func publishedPins() { pinnedEnds = publishingEnds }

    /// An open knows the pinned files from the sync base, not their members' ends in the
    /// published root: a pinned pack takes no new member until the next sync pins again.
    mutating func pinWhole(_ numbers: Set<UInt64>) {
        for number in numbers where packs[number] != nil { pinnedEnds[number] = Format.fileSize }
        publishingEnds = pinnedEnds
    }

    /// A merge builds the packs anew: the pins stay.
    mutating func keepPins(of other: PackStore) {
        pinnedEnds = other.pinnedEnds
        publishingEnds = other.publishingEnds
    }

    /// Removes a member; returns the pack's file number when that left it empty (free again).
    mutating func releaseMember(_ id: UInt64, _ member: ItemRecord.Member) -> UInt64? {
        guard packs[member.fileNumber] != nil else { return nil }
        packs[member.fileNumber]!.liveBytes -= Int(member.sealedLength)
        packs[member.fileNumber]!.members.remove(id)
        unlisted[member.fileNumber]?.insert(id)
        changedSinceCommit.insert(member.fileNumber)
        // Members not known: every member has sealed bytes, so no live bytes is none left.
        let empty = unlisted[member.fileNumber] == nil ? packs[member.fileNumber]!.members.isEmpty : packs[member.fileNumber]!.liveBytes <= 0
        guard empty && openPack?.fileNumber != member.fileNumber else { return nil }
        packs[member.fileNumber] = nil
        unlisted[member.fileNumber] = nil
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
        return candidates(needing: count, avoiding: emptied, writer: writer).contains { writer.isUsable($0.number) }
    }

    /// Packs of this device other than `avoiding` with room for `count` bytes after where new
    /// members may start (`placementEnd`), the most free tail first (lowest number on a tie).
    private func candidates(needing count: Int, avoiding: UInt64?, writer: FileWriter) -> [(number: UInt64, end: Int)] {
        // Only this device's packs take members: another device's files are never written.
        packs.keys.map { (number: $0, end: placementEnd($0)) }
            .filter { Format.fileSize - $0.end >= count && writer.allocator.isOwnDevice($0.number) && $0.number != avoiding }
            .sorted { ($0.end, $0.number) < ($1.end, $1.number) }
    }

    /// The existing pack with the most free tail that fits (lowest number on a tie), or a new one.
    private mutating func chooseOpenPack(needing count: Int, avoiding: UInt64?, writer: inout FileWriter) throws -> OpenPack {
        // A pack file that is missing or of the wrong size takes no new members: writing them
        // would fail every commit from now on. Its own items report the damage when read.
        for (number, end) in candidates(needing: count, avoiding: avoiding, writer: writer) where writer.isUsable(number) {
            return OpenPack(existing: number, reservedEnd: end)
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

    /// Own packs (`isOwn`) to empty into the open pack at this commit, lowest first: only packs
    /// that lost members (live bytes below the end they reserve), since a pack that is merely
    /// small would move into a new pack at every session. Another device's pack is that
    /// device's to compact (FORMAT.md §7.2): moving its members frees nothing here, and right
    /// after a merge its new bytes may still be staged, not at its name (§13.11).
    func sparsePacks(own isOwn: (UInt64) -> Bool) -> [UInt64] {
        packs.filter { $0.value.liveBytes > 0 && $0.value.liveBytes < Self.compactionThreshold
                       && $0.value.liveBytes < $0.value.reservedEnd
                       && $0.key != openPack?.fileNumber && isOwn($0.key) }.map(\.key).sorted().prefix(Self.compactionsPerCommit).map { $0 }
    }

    /// The members of a pack, by item, in item order.
    func members(of number: UInt64) -> [UInt64] {
        precondition(unlisted[number] == nil, "the members of a pack not known yet")
        return packs[number]?.members.sorted() ?? []
    }

    func isOpen(_ number: UInt64) -> Bool { openPack?.fileNumber == number }

    /// After a commit: each pack reserves only what the new root references (`member` gives an
    /// item's member), and the open pack continues on disk. A pack no member left or joined
    /// since the last commit reserves what it did.
    mutating func didCommit(member: (UInt64) -> ItemRecord.Member?) {
        for number in changedSinceCommit {
            guard let info = packs[number] else { continue }
            precondition(unlisted[number] == nil, "the end of a pack whose members are not known")
            packs[number]!.reservedEnd = info.members.reduce(0) { end, id in
                guard let member = member(id) else { return end }
                return max(end, Int(member.offset) + Int(member.sealedLength))
            }
        }
        changedSinceCommit = []
        if let pack = openPack { openPack = OpenPack(existing: pack.fileNumber, reservedEnd: placementEnd(pack.fileNumber)) }
    }

    /// Erases plaintext of members not yet written (R-MEM-3).
    mutating func wipe() {
        openPack?.wipe()
        openPack = nil
    }
}

/// No other pack has room for a compacted member: compaction waits for a later commit.
struct CompactionWaits: Error {}

import VaultFormat

/// Which of its files a vault may write to (docs/FORMAT.md §9.2). A file referenced by the
/// committed root is never handed out before the next commit: freeing it only schedules it.
struct FileAllocator {
    static let group = UInt64(Format.groupSize)

    /// Format 2: this device's FileRefs are `base + number` (its index in the top 16 bits,
    /// docs/FORMAT.md §13.4); every number here is such a raw FileRef. 0 for device 0 and format 1.
    let base: UInt64
    private(set) var ownedGroups: [GroupRange]
    private(set) var nextFileNumber: UInt64
    let coverCount: UInt8
    /// Files the last published remote root references (§13.11): never freed until the next sync.
    private var pinned: Set<UInt64> = []
    /// Those of the remote root a sync is about to publish: pinned beside the ones of the root
    /// still on the remote until it is up (a mounted vault goes on writing meanwhile).
    private var pinsToPublish: Set<UInt64> = []
    /// Free numbers, highest first, so the lowest is taken from the end.
    private var free: [UInt64] = []
    /// Freed since the last commit, but the committed root still points at them.
    private var pendingFree: [UInt64] = []
    /// Handed out since the last commit: freeing them again makes them free at once.
    private var allocatedSinceCommit: Set<UInt64> = []
    /// Numbers of groups made since the last commit whose files do not exist yet.
    private(set) var unwritten: Set<UInt64> = []
    /// Groups made since the last commit, in the order they were made.
    private var groupsSinceCommit: [UInt64] = []
    /// Files to refill with random bytes after the next commit point (§9.2 step 6): freed by the
    /// last commit (the other slot's root may still reference them until then), or never
    /// referenced by a root at all. Empty at open: the last session's lock refilled what it freed
    /// (a session that changes nothing writes nothing).
    private var refillAtNextCommit: Set<UInt64> = []
    /// Due now, taken by `takeRefill`.
    private var refillNow: [UInt64] = []

    /// A new vault: group 0 is made at its first commit.
    init(newVaultWithCovers coverCount: UInt8, device: UInt16 = 0) {
        self.coverCount = coverCount
        base = UInt64(device) << UInt64(FileRef.numberBits)
        ownedGroups = []
        nextFileNumber = base
        addGroup()
    }

    /// A vault read from its root; `used` are the numbers its records and pages reference.
    init(root: IndexRoot, used: Set<UInt64>) {
        self.init(ownedGroups: root.ownedGroups, nextFileNumber: root.nextFileNumber, coverCount: root.coverCount, used: used, base: 0)
    }

    /// A format-2 vault's device entry (docs/FORMAT.md §13.4): the same fields.
    /// `index`: the device's place in the table; `used` and `pinned` are raw FileRefs.
    init(device: DeviceEntry, index: UInt16 = 0, used: Set<UInt64>, pinned: Set<UInt64> = []) {
        self.init(ownedGroups: device.ownedGroups, nextFileNumber: device.nextFileNumber, coverCount: device.coverCount,
                  used: used.union(pinned), base: UInt64(index) << UInt64(FileRef.numberBits))
        self.pinned = pinned
        pinsToPublish = pinned
    }

    /// What the sync base pins: held by the root though nothing in it references them (§15.4).
    var pinnedNumbers: Set<UInt64> { pinned }
    /// Released since the last commit, which still references them: free from the next.
    var releasedNumbers: Set<UInt64> { Set(pendingFree) }

    /// The pins of an open that read them only later (index 3, `VaultState.readPinsIfUnread`):
    /// its free files came from the file blocks, which hold the pins, so only a pinned file
    /// released since waits on them, and stays unfreed.
    mutating func learnPins(_ numbers: Set<UInt64>) {
        pinned = numbers
        pinsToPublish = numbers
        pendingFree.removeAll { numbers.contains($0) }
    }

    /// A sync's commit: the files of the remote root it will publish are pinned too.
    mutating func pin(_ numbers: Set<UInt64>) {
        pinned.formUnion(numbers)
        pinsToPublish = numbers
        // Freed here before the remote root was known to use them: not to be handed out again.
        free.removeAll { numbers.contains($0) }
        pendingFree.removeAll { numbers.contains($0) }
    }

    /// That remote root is up: files only the one before referenced are freed, unless the
    /// vault still uses them (`stillUsed`).
    mutating func publishedPins(stillUsed: Set<UInt64>) {
        let dropped = pinned.subtracting(pinsToPublish)
        pinned = pinsToPublish
        for number in dropped where !stillUsed.contains(number) { release(number) }
    }

    private init(ownedGroups: [GroupRange], nextFileNumber: UInt64, coverCount: UInt8, used: Set<UInt64>, base: UInt64) {
        self.coverCount = coverCount
        self.base = base
        self.ownedGroups = ownedGroups.map { GroupRange(first: $0.first + base / Self.group, count: $0.count) }
        self.nextFileNumber = nextFileNumber + base
        for range in self.ownedGroups.reversed() {
            for number in (range.first * Self.group..<range.end * Self.group).reversed()
            where number >= firstDataNumber && !used.contains(number) {
                free.append(number)
            }
        }
    }

    /// Slots and covers come first in group 0.
    var firstDataNumber: UInt64 { base + Format.indexSlotCount + UInt64(coverCount) }
    var coverNumbers: Range<UInt64> { base + Format.indexSlotCount..<firstDataNumber }
    /// The device entry's own view (§13.4): groups and next number without the device index.
    var entryGroups: [GroupRange] { ownedGroups.map { GroupRange(first: $0.first - base / Self.group, count: $0.count) } }
    var entryNextFileNumber: UInt64 { nextFileNumber - base }
    /// Whether a raw FileRef is a number of this device at all (owned or not).
    func isOwnDevice(_ number: UInt64) -> Bool { number >> UInt64(FileRef.numberBits) == base >> UInt64(FileRef.numberBits) }
    var freeCount: Int { free.count }
    /// The free numbers, lowest first.
    var freeNumbers: [UInt64] { free.reversed() }

    func owns(_ number: UInt64) -> Bool {
        let group = number / Self.group
        var low = 0, high = ownedGroups.count
        while low < high {
            let mid = (low + high) / 2
            if ownedGroups[mid].end <= group { low = mid + 1 } else { high = mid }
        }
        return low < ownedGroups.count && ownedGroups[low].first <= group
    }

    /// The lowest free number; makes a new group when none is free.
    mutating func allocate() -> UInt64 {
        if free.isEmpty { addGroup() }
        let number = free.removeLast()
        allocatedSinceCommit.insert(number)
        return number
    }

    /// Makes a new group now (its files are still to be written); returns its numbers.
    mutating func makeGroup() -> Range<UInt64> {
        let start = nextFileNumber
        addGroup()
        return start..<nextFileNumber
    }

    /// Makes a new group whose numbers are not handed out until `groupIsMade`: its files are
    /// being written outside the vault's lock (write-behind), whole before data goes in.
    mutating func startGroup() -> Range<UInt64> {
        let start = nextFileNumber
        addGroup(free: false)
        return start..<nextFileNumber
    }

    /// `startGroup` with the names of its numbers; nothing changes when a name cannot be made.
    mutating func startGroupNames(_ name: (UInt64) throws -> String) throws -> (numbers: Range<UInt64>, names: [String]) {
        let next = nextFileNumber..<nextFileNumber + Self.group
        let names = try next.map(name)
        return (startGroup(), names)
    }

    /// A group's files exist: its numbers are handed out from now on, but for `except` (held by
    /// something not ours, never written).
    mutating func groupIsMade(_ numbers: Range<UInt64>, except: Set<UInt64> = []) {
        for number in numbers.reversed() where number >= firstDataNumber && !except.contains(number) { insertFree(number) }
    }

    /// Gives up a group from `startGroup` whose files could not all be made (a full disk): it
    /// leaves the owned groups as if never made. The newest group's numbers come again with the
    /// next group; an older one's (two were being made at once) stay unused, a gap as a released
    /// group leaves, so that no file of it is ever made alone. Numbers it handed out are no
    /// longer owned: their write-behinds' release does nothing.
    mutating func giveUpGroup(_ numbers: Range<UInt64>) {
        let group = numbers.lowerBound / Self.group
        unwritten.subtract(numbers)
        allocatedSinceCommit.subtract(numbers)
        removeOwned(group)
        groupsSinceCommit.removeAll { $0 == group }
        if numbers.upperBound == nextFileNumber { nextFileNumber -= Self.group }
    }

    /// Whether the file for `number` exists yet (new groups are made lazily).
    func needsCreate(_ number: UInt64) -> Bool { unwritten.contains(number) }
    mutating func markCreated(_ number: UInt64) { unwritten.remove(number) }
    /// An owned file that is not there (removed behind the vault's back): made again when written.
    mutating func markMissing(_ number: UInt64) { unwritten.insert(number) }

    mutating func release(_ number: UInt64) {
        // Another device's file, or one the published remote root still needs: not ours to free.
        guard owns(number), !pinned.contains(number) else { return }
        if allocatedSinceCommit.remove(number) != nil {
            // Written since the commit (a chunk of a committed item, say) and dropped before it.
            insertFree(number)
            refillAtNextCommit.insert(number)
        } else {
            pendingFree.append(number)
        }
    }

    /// After a commit: what the old root referenced and the new one does not becomes free.
    /// `refillFreedNow`: format 2, whose other slot gets a copy of the new root, so that what
    /// this commit freed is referenced by neither slot and is refilled at once.
    mutating func didCommit(refillFreedNow: Bool = false) {
        // Neither slot's root references a file that was free before this commit and still is.
        let freeNow = Set(free)
        refillNow = refillAtNextCommit.filter { freeNow.contains($0) && !unwritten.contains($0) }.sorted()
        refillAtNextCommit = Set(pendingFree)
        for number in pendingFree { insertFree(number) }
        pendingFree = []
        if refillFreedNow {
            refillNow = Set(refillNow).union(refillAtNextCommit.filter { !unwritten.contains($0) }).sorted()
            refillAtNextCommit = []
        }
        allocatedSinceCommit = []
        groupsSinceCommit = []
    }

    /// Takes `number` out of the free files for good (a file the index does not list but the
    /// vault uses: an upgrade's unlock record found at its name). False when it was not free.
    mutating func reserve(_ number: UInt64) -> Bool {
        guard let index = free.firstIndex(of: number) else { return false }
        free.remove(at: index)
        return true
    }

    /// Takes out of the free files the lowest one of a group the committed root owns that
    /// `usable` accepts (a follow lends its file to a new slot, docs/FORMAT.md §14.8): free to
    /// the committed root too, so a cut that leaves it missing leaves no file that root does not
    /// count. A group made since the commit is a crash's leftover to that root. Nil when none.
    mutating func takeCommittedFree(_ usable: (UInt64) throws -> Bool) rethrows -> UInt64? {
        for index in free.indices.reversed() {
            let number = free[index]
            guard !groupsSinceCommit.contains(number / Self.group), !unwritten.contains(number), try usable(number) else { continue }
            free.remove(at: index)
            return number
        }
        return nil
    }

    /// Takes out of the free files every one that `missing` accepts, but those of groups not made
    /// yet (no file is expected there): free files lent to a follow's slots, found together
    /// (`FileWriter.missingFileWasLent`). Lowest first.
    mutating func takeFree(where missing: (UInt64) throws -> Bool) rethrows -> [UInt64] {
        var taken: [UInt64] = [], kept: [UInt64] = []
        kept.reserveCapacity(free.count)
        for number in free {
            if !unwritten.contains(number), try missing(number) { taken.append(number) } else { kept.append(number) }
        }
        free = kept
        return taken.reversed()
    }

    /// Files an old slot was renamed into (a follow's switch, docs/FORMAT.md §14.8): free, and
    /// refilled after the next commit point (they hold a root of the old keys).
    mutating func refillAfterNextCommit(_ numbers: [UInt64]) {
        for number in numbers {
            if !free.contains(number) { insertFree(number) }
            refillAtNextCommit.insert(number)
        }
    }

    /// Every free file that exists is refilled right after this commit (the upgrade's step 5:
    /// free files may hold format-1 seals of earlier versions).
    mutating func refillEveryFreeFile() {
        refillNow = Set(refillNow).union(free.filter { !unwritten.contains($0) }).sorted()
    }

    /// Whether a free file waits for its refill at the next commit.
    var hasRefillDue: Bool {
        let freeNow = Set(free)
        return refillAtNextCommit.contains { freeNow.contains($0) && !unwritten.contains($0) }
    }

    /// The free files the commit just made due for refilling (once each).
    mutating func takeRefill() -> [UInt64] {
        defer { refillNow = [] }
        return refillNow
    }

    /// Gives back the groups made since the last commit, from the highest down, into which
    /// nothing went (all of their files free again, e.g. the data written to them was deleted
    /// before the commit): a commit then need not create their files, which on a full disk it
    /// could not. Their numbers were never in a committed root, so they can be handed out again.
    /// Returns their numbers and, among them, those whose files exist already (to remove).
    mutating func dropUnusedNewGroups() -> (numbers: [UInt64], existing: [UInt64]) {
        var numbers: [UInt64] = [], existing: [UInt64] = []
        while let group = groupsSinceCommit.last, group != base / Self.group, (group + 1) * Self.group == nextFileNumber {
            let range = group * Self.group..<(group + 1) * Self.group
            let freeNumbers = Set(free)
            guard range.allSatisfy({ freeNumbers.contains($0) }) else { break }
            free.removeAll { range.contains($0) }
            existing += range.filter { !unwritten.contains($0) }
            numbers += range
            unwritten.subtract(range)
            allocatedSinceCommit.subtract(range)
            removeOwned(group)
            nextFileNumber -= Self.group
            groupsSinceCommit.removeLast()
        }
        return (numbers, existing)
    }

    /// Groups other than 0 all of whose files are (or become at this commit) free, beyond the
    /// one kept for the next writes: the ones to release now, highest first (§9.2). With
    /// `keepingBlocksOf`, only groups whose block of that many numbers keeps another owned group:
    /// index 3's file blocks, once derived, stay those of the groups owned (§15.4).
    mutating func takeReleasableGroups(keepingBlocksOf blockSize: UInt64? = nil) -> [UInt64] {
        var freeAfterCommit = Set(free)
        freeAfterCommit.formUnion(pendingFree)
        var candidates: [UInt64] = []
        for range in ownedGroups.reversed() {
            for group in (range.first..<range.end).reversed() where group != base / Self.group {
                let numbers = group * Self.group..<(group + 1) * Self.group
                if numbers.allSatisfy({ freeAfterCommit.contains($0) && !unwritten.contains($0) }) { candidates.append(group) }
            }
        }
        guard candidates.count > 1 else { return [] }
        var released = Array(candidates.dropLast())
        if let blockSize {
            let going = Set(released), perBlock = blockSize / Self.group, first = base / Self.group
            let block = { (group: UInt64) in (group - first) / perBlock }
            let keptBlocks = Set(ownedGroups.lazy.flatMap { $0.first..<$0.end }.filter { !going.contains($0) }.map(block))
            released.removeAll { !keptBlocks.contains(block($0)) }
        }
        let numbers = Set(released.lazy.flatMap { $0 * Self.group..<($0 + 1) * Self.group })
        free.removeAll { numbers.contains($0) }
        pendingFree.removeAll { numbers.contains($0) }
        for group in released { removeOwned(group) }
        return released.flatMap { Array($0 * Self.group..<($0 + 1) * Self.group) }
    }

    private mutating func addGroup(free: Bool = true) {
        let group = nextFileNumber / Self.group
        let numbers = nextFileNumber..<nextFileNumber + Self.group
        nextFileNumber += Self.group
        groupsSinceCommit.append(group)
        if let last = ownedGroups.last, last.end == group {
            ownedGroups[ownedGroups.count - 1].count += 1
        } else {
            ownedGroups.append(GroupRange(first: group, count: 1))
        }
        unwritten.formUnion(numbers)
        if free { groupIsMade(numbers) }
        // A new group's numbers count as handed out since the commit: nothing references them.
        allocatedSinceCommit.formUnion(numbers)
    }

    private mutating func removeOwned(_ group: UInt64) {
        guard let index = ownedGroups.firstIndex(where: { $0.first <= group && group < $0.end }) else { return }
        let range = ownedGroups[index]
        var pieces: [GroupRange] = []
        if group > range.first { pieces.append(GroupRange(first: range.first, count: group - range.first)) }
        if group + 1 < range.end { pieces.append(GroupRange(first: group + 1, count: range.end - group - 1)) }
        ownedGroups.replaceSubrange(index...index, with: pieces)
    }

    private mutating func insertFree(_ number: UInt64) {
        // Descending order: binary search for the first element smaller than `number`.
        var low = 0, high = free.count
        while low < high {
            let mid = (low + high) / 2
            if free[mid] > number { low = mid + 1 } else { high = mid }
        }
        free.insert(number, at: low)
    }
}

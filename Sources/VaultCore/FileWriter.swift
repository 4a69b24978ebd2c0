import VaultCrypto
import VaultFormat
import VaultStore

/// Writes whole files into the vault's own numbers (docs/FORMAT.md §3.3, §9.2): takes free
/// numbers from the `FileAllocator`, makes new groups whole, creates or overwrites files,
/// remembers what must be synced before the next root, and which released files must go.
///
/// Invariants: nothing is written outside the owned groups; a file the committed root uses is
/// never handed out (the allocator); something at one of our names that is not ours is never
/// replaced (R-SEC-4); every group is whole on disk before the root that owns it.
struct FileWriter {
    let storage: any StorageFolder
    var secrets: VaultSecrets
    let random: any RandomSource
    var allocator: FileAllocator
    /// New groups whose files are being made outside the vault's lock: one ahead of need, and
    /// one for each request whose data needs it now (a request never waits for another's: a
    /// write-behind may be slow to get going).
    private(set) var groupsBeingMade = 0
    /// Groups being assembled from chunks written behind (`GroupAssembly`).
    private(set) var assemblies: [GroupAssembly] = []
    var groupBeingMade: Bool { groupsBeingMade > 0 }
    /// Whether data that finds the free files down to the reserve makes a new group at once,
    /// under the vault's lock: in a commit (which holds the lock throughout anyway) and for a
    /// writer used alone. Otherwise (`VaultState` between commits) that data is refused
    /// (`mayTakeData`, `GroupNeeded`) and waits, dirty, in the cache, while `Vault` has the
    /// group made outside the lock: no request waits for 16 file creations.
    var groupsUnderLock = true
    /// Files written since the last commit: synced before the next root.
    private(set) var unsynced: Set<UInt64> = []
    private(set) var createdSinceCommit = false
    /// A file could not be made for lack of room (ENOSPC) since the last group made: data that
    /// needs a new group is refused before it goes in (`checkRoomForData`).
    var storageIsFull = false
    /// Files of released groups that may still exist: in the `releasing` of every root until
    /// they are removed (docs/FORMAT.md §9.2 step 6).
    private(set) var releasingFiles: [UInt64] = []

    /// Free files which data never takes (a group is made before): on a full disk they let a
    /// delete commit (its index pages are written copy-on-write, while the deleted data's files
    /// are still referenced by the committed root).
    static let reservedFiles = 4

    /// Whether freed files get random bytes (§9.2 step 6); off only in a test that shows what
    /// format 1's keys alone leave readable.
    var refillsFreedFiles = true
    /// Whether groups are released as the root is written, after the pages, as releases before
    /// 2026-12-05 did (their index 3 could keep a file block of no owned number, §15.4); on only
    /// in the test that opens what they wrote.
    var releasesAtRoot = false

    /// Format 2, a new vault: its owner unlock record (name and sealed file), made before any
    /// other file of the vault, so that a crash leaves nothing the next open cannot find
    /// through the pattern (`writeUnlockRecord`).
    var pendingUnlock: (name: String, file: [UInt8])?

    init(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, allocator: FileAllocator) {
        self.storage = storage
        self.secrets = secrets
        self.random = random
        self.allocator = allocator
    }

    func name(_ number: UInt64) throws -> String { try secrets.fileName(number) }

    /// Writes `random(F)` over each free file the commit made due (§9.2 step 6), in place and
    /// without a sync: best effort, so a file that cannot be written is left for nobody. Returns
    /// how many it wrote.
    mutating func refillFreedFiles() -> Int {
        let numbers = allocator.takeRefill()
        guard refillsFreedFiles else { return 0 }
        var count = 0
        for number in numbers {
            guard let name = try? name(number), let bytes = try? random.bytes(Format.fileSize),
                  (try? storage.write(name, offset: 0, bytes: bytes)) != nil else { continue }
            count += 1
        }
        return count
    }

    var hasUnsyncedFiles: Bool { !unsynced.isEmpty }

    mutating func release(_ number: UInt64) { allocator.release(number) }

    /// Writes a whole file into a newly allocated number (copy-on-write); returns the number.
    /// `data`: a chunk, which keeps out of the reserve of existing free files (`reservedFiles`).
    mutating func store(_ file: [UInt8], data: Bool = false) throws -> UInt64 {
        let number = try allocateUsable(data: data)
        do { try storeFile(number, file) } catch {
            allocator.release(number)
            throw error
        }
        return number
    }

    /// A free number whose file can take new bytes. The vault's files are its own, but the
    /// folder is not: a free file that someone removed is made again when written; one that is
    /// not a regular file of the storage size is damage, never written (R-SEC-4), and skipped
    /// (it stays handed out until the session ends). Either way one damaged block does not stop
    /// every later commit.
    mutating func allocateUsable(data: Bool = false) throws -> UInt64 {
        try writeUnlockRecord()
        while true {
            let dataWaits = data && allocator.freeCount <= Self.reservedFiles
            if dataWaits || allocator.freeCount == 0 {
                if dataWaits { guard groupsUnderLock else { throw GroupNeeded() } }
                // The record and group 0 before any other group: what a crash leaves is found.
                try releaseGroupZero()
                // Data never takes the last free files: a new group is made, whole, first. If
                // the disk cannot hold it, this write fails with ENOSPC now, the reserve stays
                // for the index pages of a delete, and no later commit needs room for the group.
                let numbers = allocator.makeGroup()
                do { try createGroupFiles(numbers) } catch {
                    noteWriteFailure(error)
                    try? dropUnusedNewGroups()
                    throw error
                }
                storageIsFull = false
            }
            let number = allocator.allocate()
            let name = try name(number)
            if allocator.needsCreate(number) {
                // A new group's file is made at its name: whatever is there already is not ours.
                guard try storage.entryExists(name) else { return number }
                allocator.markCreated(number)
                continue
            }
            if (try? storage.read(name, offset: 0, count: 0)) != nil { return number }
            if try !storage.entryExists(name) {
                // Missing while the count is whole: lent to a slot of a follow cut short
                // (docs/FORMAT.md §14.8, "The file count of a follow"), not made again.
                if try missingFileWasLent(number) { continue }
                allocator.markMissing(number)
                return number
            }
        }
    }

    // MARK: A follow's slots (docs/FORMAT.md §14.8, "The file count of a follow")

    /// Free numbers found missing while the storage's count was whole (handed out for the
    /// session, never made again): an old slot goes into one at a follow's switch.
    private(set) var absentFreeNumbers: [UInt64] = []

    /// Format 2, no upgrade in progress: a free file of this vault may be lent to a follow's slot
    /// (on any device, device 0 too: it follows a withdrawal made on another device of the
    /// owner). Not in format 1, where an upgrade cut short leaves its record in a free file's
    /// place, which an older release makes again (FormatUpgradeTests).
    var lendsFreeFiles = false

    /// Whether a free file found missing may be lent to a follow's slot: `lendsFreeFiles`, and
    /// the storage's files are a multiple of 16. An upgraded vault's names move pins each file it
    /// moved to its new name (§13.12), so a moved free file is not missing.
    func mayBeLent() throws -> Bool { try lendsFreeFiles && storage.listFiles().count % Format.groupSize == 0 }

    /// Whether the free file `number`, handed out and found missing, was lent (`mayBeLent`): then
    /// it is kept out for the session (`absentFreeNumbers`), and with it every other free file
    /// that the same listing misses, lent as surely: nothing but this device writes at its
    /// names, and other writers move the count by whole groups (§3.3). So a session lists the
    /// storage once for all the files a follow cut short lent, not once each, which was
    /// O(missing × files). One missing while the count is not whole is made again, and each
    /// made moves the count: the next one met is told by a listing of its own.
    mutating func missingFileWasLent(_ number: UInt64) throws -> Bool {
        guard lendsFreeFiles else { return false }
        let listed = try storage.listFiles()
        guard listed.count % Format.groupSize == 0 else { return false }
        let present = Set(listed), storage = self.storage, secrets = self.secrets
        absentFreeNumbers.append(number)
        absentFreeNumbers += try allocator.takeFree { free in
            let name = try secrets.fileName(free)
            // A name the listing leaves out may hold something not of the storage's form: not lent.
            return try !present.contains(name) && !storage.entryExists(name)
        }
        return true
    }

    /// A free file of this device that a follow lends to a new slot (FORMAT.md §14.8, "The file
    /// count of a follow"): one the committed root owns and counts free, whose file is there;
    /// taken when the follow starts, before its commit hands free files out (that commit may
    /// make a group, whose files the old root, opened after a cut, removes as leftovers: a slot
    /// lent from it would stay as a file over the count). Nil when the committed root has none.
    mutating func takeLendableFile() throws -> UInt64? {
        let storage = self.storage, secrets = self.secrets
        return try allocator.takeCommittedFree { number in
            (try? storage.read(try secrets.fileName(number), offset: 0, count: 0)) != nil
        }
    }

    /// Up to `count` files from `takeLendableFile`, for the slots of the owner's new root at a
    /// withdrawal (docs/FORMAT.md §14.8, "The file count of a withdrawal").
    mutating func takeLendableFiles(_ count: Int) throws -> [UInt64] {
        var numbers: [UInt64] = []
        while numbers.count < count, let number = try takeLendableFile() { numbers.append(number) }
        return numbers
    }

    /// When the committed root has fewer than `count` free files to lend: a new group, whose
    /// files are made now, and `count` of its numbers, taken out of the free files so that the
    /// next commit (under the old keys: the vault's usual refill) owns the group and keeps it
    /// (an unused new group would be dropped). Those files are free to that root, as lent files
    /// must be (`takeLendableFile`).
    mutating func makeGroupToLend(_ count: Int) throws -> [UInt64] {
        guard count > 0 else { return [] }
        let numbers = allocator.makeGroup()
        do { try createGroupFiles(numbers) } catch {
            try? dropUnusedNewGroups()
            throw error
        }
        // A number something not ours holds (R-SEC-4) was not made: not one to lend.
        let made = numbers.filter { $0 >= allocator.firstDataNumber && unsynced.contains($0) }.prefix(count)
        for number in made { _ = allocator.reserve(number) }
        return Array(made)
    }

    /// A missing slot of the root opened (a withdrawal cut between its two renames, §14.8) while
    /// the storage's count is whole: a free file lent to it, renamed, instead of a file made
    /// (which would leave the count one over). Its number is missing from then on, for an old
    /// slot to fill (`takeMissingNumber`). False when no free file may be lent.
    mutating func lendToMissingSlot(_ slotName: String) throws -> Bool {
        guard try mayBeLent(), let number = try takeLendableFile() else { return false }
        try storage.rename(try name(number), to: slotName)
        absentFreeNumbers.append(number)
        try storage.syncFolder()
        return true
    }

    /// Renames an existing free file of this device to `slotName` (a slot of a follow's new
    /// root, made without changing the file count) when `takeLendableFile` found none; may take
    /// one of a group made since the commit (a cut before the switch then leaves the count
    /// over, docs/FORMAT.md §14.8); returns its number, handed out until an old
    /// slot fills it (`takeMissingNumber`). Not a file the committed root references, nor a
    /// pinned one, nor one freed since the commit: those are not free.
    mutating func lendFreeFile(to slotName: String) throws -> UInt64 {
        while true {
            if allocator.freeCount == 0 { try createGroupFiles(allocator.makeGroup()) }
            let number = allocator.allocate()
            // A file of a group not made yet, or one missing or damaged: not one to move.
            guard !allocator.needsCreate(number) else { continue }
            let name = try name(number)
            guard (try? storage.read(name, offset: 0, count: 0)) != nil else {
                if try !storage.entryExists(name) { _ = try missingFileWasLent(number) }
                continue
            }
            try storage.rename(name, to: slotName)
            return number
        }
    }

    /// A number of this device whose file is missing, for an old slot to go into: from `lent`
    /// (the follow's own), then those found absent, then the free numbers (a follow cut short
    /// lent them; found by their names). Nil when none is missing.
    mutating func takeMissingNumber(lent: inout [UInt64]) throws -> UInt64? {
        while let number = lent.popLast() {
            if try !storage.entryExists(name(number)) { return number }
        }
        while let number = absentFreeNumbers.popLast() {
            if try !storage.entryExists(name(number)) { return number }
        }
        for number in allocator.freeNumbers where !allocator.needsCreate(number) {
            if try !storage.entryExists(name(number)), allocator.reserve(number) { return number }
        }
        return nil
    }

    /// Whether data may take a free file now: without a new group, or where one may be made.
    var mayTakeData: Bool { groupsUnderLock || allocator.freeCount > Self.reservedFiles }

    /// Data found the free files down to the reserve where no group may be made under the lock.
    struct GroupNeeded: Error {}

    /// Whether `number`'s file can be read (a pack that takes new members must be).
    func isUsable(_ number: UInt64) -> Bool {
        heldGroupZero?[number] != nil || (try? storage.read(try name(number), offset: 0, count: 0)) != nil
    }

    /// Makes the files of a new group (random bytes), together (§3.3).
    private mutating func createGroupFiles(_ numbers: Range<UInt64>) throws {
        try createRandomFiles(numbers.filter { allocator.needsCreate($0) })
    }

    /// Files of random bytes at numbers of new groups, made together, unless something not ours
    /// is at one (R-SEC-4): then that number is skipped (never handed out), and the group has one
    /// file less.
    private mutating func createRandomFiles(_ numbers: [UInt64]) throws {
        var files: [(name: String, contents: [UInt8])] = [], made: [UInt64] = []
        for number in numbers {
            let name = try name(number)
            if try storage.entryExists(name) {
                allocator.markCreated(number)
                continue
            }
            files.append((name, try random.bytes(Format.fileSize)))
            made.append(number)
        }
        guard !files.isEmpty else { return }
        try storage.createGroup(files)
        for number in made { allocator.markCreated(number) }
        unsynced.formUnion(made)
        createdSinceCommit = true
    }

    /// Writes a whole file at `number`: created if its group is new, else overwritten.
    mutating func storeFile(_ number: UInt64, _ file: [UInt8]) throws {
        if heldGroupZero != nil, allocator.needsCreate(number) {
            heldGroupZero?[number] = file
            return
        }
        if allocator.needsCreate(number) {
            try storage.create(try name(number), contents: file, durable: false)
            allocator.markCreated(number)
            createdSinceCommit = true
        } else {
            try storage.write(try name(number), offset: 0, bytes: file)
        }
        unsynced.insert(number)
    }

    /// Writes bytes into an existing file (new members of a pack).
    mutating func write(_ number: UInt64, offset: Int, bytes: [UInt8]) throws {
        if var held = heldGroupZero?[number] {
            held.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            heldGroupZero?[number] = held
            return
        }
        try storage.write(try name(number), offset: offset, bytes: bytes)
        unsynced.insert(number)
    }

    /// A join's stand-ins for its slots and record (docs/FORMAT.md §13.12, `JoinStandIns`).
    var joinStandIns: JoinStandIns?
    /// A join's record, written into its stand-in: renamed to its name after the root's copy.
    private var recordInStandIn: (standIn: String, name: String)?

    /// Creates the pending unlock record (durably, its name synced), once, before anything else.
    /// A join's goes into its stand-in, after its own group 0, made whole: no number of the
    /// join's commit moves the count of files; named after the root's copy, or at once
    /// (`JoinStandIns.recordNamedFirst`). A new vault's comes with its group 0, whole
    /// (`makeGroupZero`).
    mutating func writeUnlockRecord() throws {
        guard let unlock = pendingUnlock, heldGroupZero == nil else { return }
        if makesGroupZeroWhole { return try makeGroupZero() }
        if let standIns = joinStandIns, try storage.entryExists(standIns.record) {
            try createRandomFiles(allocator.unwritten.sorted().filter { $0 >= Format.indexSlotCount })
            try storage.write(standIns.record, offset: 0, bytes: unlock.file)
            try storage.sync([standIns.record])
            pendingUnlock = nil
            recordInStandIn = (standIns.record, unlock.name)
            if standIns.recordNamedFirst { try renameRecordFromStandIn() }
            return
        }
        try storage.create(unlock.name, contents: unlock.file, durable: true)
        pendingUnlock = nil
        try storage.syncFolder()
    }

    /// An upgrade's unlock record (docs/FORMAT.md §13.9 step 2): written over the free file
    /// `number`, synced, then renamed to `name`, so that the name never shows bytes that are not
    /// on disk; the folder sync before the root makes the new name durable. A file of a group
    /// made since the last commit, not there yet, is created at `name` instead. `file` nil: the
    /// record was found at its name after a crash, which may have kept the rename from the disk;
    /// the same folder sync makes it durable.
    mutating func placeUnlockRecord(_ file: [UInt8]?, number: UInt64, name: String) throws {
        if let file { try writeUpgradeRecord(file, number: number, name: name) }
        createdSinceCommit = true
    }

    private mutating func writeUpgradeRecord(_ file: [UInt8], number: UInt64, name: String) throws {
        if allocator.needsCreate(number) {
            try storage.create(name, contents: file, durable: true)
            allocator.markCreated(number)
        } else {
            let numbered = try self.name(number)
            try storage.write(numbered, offset: 0, bytes: file)
            try storage.sync([numbered])
            try storage.rename(numbered, to: name)
        }
    }

    // MARK: Groups made outside the lock

    /// The next group's files, to make outside the lock when free files run short: ahead of
    /// need (nil when one is being made already), or `needed` now by data; nil when there is room.
    mutating func startGroupWrite(needed: Bool = false) -> GroupWrite? {
        if heldGroupZero != nil { guard needed, (try? releaseGroupZero()) != nil else { return nil } }
        guard (try? writeUnlockRecord()) != nil, needed || !groupBeingMade,
              allocator.freeCount < Self.reservedFiles + Format.groupSize,
              let names = try? allocator.startGroupNames(name) else { return nil }
        groupsBeingMade += 1
        return GroupWrite(numbers: names.numbers, names: names.names, random: random)
    }

    /// Takes in a group made outside the lock: its numbers become free. One whose files could
    /// not all be made (a full disk; `GroupWrite.run` removed what it made) is given up whole,
    /// as a group made under the lock is, when it is the newest: data does not go into files
    /// that do not exist, and the reserve stays for the index pages of a delete. A number
    /// something not ours holds (R-SEC-4) is never handed out.
    mutating func finishGroupWrite(_ write: GroupWrite, _ outcome: GroupWrite.Outcome) {
        for number in outcome.created + outcome.present { allocator.markCreated(number) }
        if outcome.complete {
            storageIsFull = false
            unsynced.formUnion(outcome.created)
            if !outcome.created.isEmpty { createdSinceCommit = true }
            allocator.groupIsMade(write.numbers, except: Set(outcome.present))
        } else {
            noteWriteFailure(outcome.failure)
            allocator.giveUpGroup(write.numbers)
        }
        groupsBeingMade -= 1
    }

    // MARK: Groups assembled from chunks written behind

    /// A number of a group being assembled for a chunk written behind (docs/FORMAT.md §3.3):
    /// from the newest assembly with room, else from a new group whose files are not made yet.
    mutating func takeAssembledNumber() throws -> UInt64 {
        try releaseGroupZero()
        try writeUnlockRecord()
        if let index = assemblies.lastIndex(where: \.hasRoom), let number = assemblies[index].take() { return number }
        let (numbers, names) = try allocator.startGroupNames(name)
        // Something not ours at one of the names (R-SEC-4) is left alone; a name that cannot be
        // checked counts as taken.
        let present = Set(zip(numbers, names).filter { (try? storage.entryExists($0.1)) != false }.map(\.0))
        var assembly = GroupAssembly(numbers: numbers, names: names, present: present)
        let number = assembly.take()
        assemblies.append(assembly)
        guard let number else { throw GroupNeeded() }
        return number
    }

    /// A number from `takeAssembledNumber` whose write-behind could not be prepared.
    mutating func giveBackAssembled(_ number: UInt64) {
        guard let index = assemblies.firstIndex(where: { $0.contains(number) }) else { return }
        assemblies[index].giveBack(number)
    }

    func isAssembled(_ number: UInt64) -> Bool { assemblies.contains { $0.contains(number) } }
    var hasAssemblies: Bool { !assemblies.isEmpty }

    /// A write-behind sealed its chunk (or failed to); returns the group to make
    /// when this was the last of it.
    mutating func deposit(_ write: ChunkWrite, _ sealed: Result<GroupFile, any Error>) -> GroupCreation? {
        guard let index = assemblies.firstIndex(where: { $0.contains(write.number) }) else { return nil }
        assemblies[index].deposit(write, sealed)
        guard assemblies[index].isFull else { return nil }
        return assemblies.remove(at: index).creation(random: random)
    }

    /// Before a commit, no write-behind running: each assembly is made with what it has.
    mutating func closeAssemblies() -> [GroupCreation] {
        let idle = assemblies.filter(\.isIdle)
        assemblies.removeAll { $0.isIdle }
        return idle.map { $0.creation(random: random) }
    }

    /// An assembled group was made: its untaken numbers become free. One that could not be made
    /// (a full disk) is given up as a group made for random bytes is.
    mutating func finishAssembly(_ creation: GroupCreation, failure: (any Error)?) {
        // Taken numbers are their write-behinds' to release; something not ours is never ours.
        let notFree = Set(creation.numbers).subtracting(creation.untaken)
        guard failure == nil else {
            noteWriteFailure(failure)
            return allocator.giveUpGroup(creation.numbers)
        }
        storageIsFull = false
        for number in creation.numbers { allocator.markCreated(number) }
        unsynced.formUnion(creation.created)
        if !creation.created.isEmpty { createdSinceCommit = true }
        allocator.groupIsMade(creation.numbers, except: notFree)
    }

    /// A chunk written behind was stored at `number` (`created`: as a new file).
    mutating func didStoreBehind(_ number: UInt64, created: Bool) {
        if created {
            allocator.markCreated(number)
            createdSinceCommit = true
        }
        unsynced.insert(number)
    }

    // MARK: The commit

    /// New groups that nothing went into are not kept: on a full disk, a delete of what filled
    /// them must still commit without making their missing files.
    mutating func dropUnusedNewGroups() throws {
        let (numbers, existing) = allocator.dropUnusedNewGroups()
        for number in existing { try storage.remove(try name(number)) }
        unsynced.subtract(numbers)
        if !existing.isEmpty { createdSinceCommit = true }
    }

    /// Files of new groups that no data went into get random bytes, so every group is whole.
    mutating func createUnwrittenFiles() throws {
        // A held group 0 is made whole with the root (`createGroupZero`); its fills are drawn now.
        guard heldGroupZero == nil else { return try fillGroupZero() }
        try writeUnlockRecord()
        try createRandomFiles(allocator.unwritten.sorted().filter { $0 >= Format.indexSlotCount })
    }

    /// Syncs every file written since the last commit, and the folder if files were made.
    mutating func syncData() throws {
        if !unsynced.isEmpty { try storage.sync(try unsynced.sorted().map { try name($0) }) }
        if createdSinceCommit { try storage.syncFolder() }
        unsynced = []
        createdSinceCommit = false
    }

    /// Groups leave the allocator before the commit point: until their files are gone they are
    /// listed in every root written, so that neither a failed commit nor a failed removal
    /// strands them. Index 3 derives its file blocks from the groups owned when a commit places
    /// its pages: groups are released before, and after only where a block keeps an owned group
    /// (`keepingBlocks`), so that the root's device entry and its blocks agree (§15.4).
    mutating func releaseGroups(keepingBlocks: Bool = false) {
        releasingFiles += allocator.takeReleasableGroups(keepingBlocksOf: keepingBlocks ? IndexKeyV3.numbersPerBlock : nil)
    }

    /// Makes a slot file and syncs its name. The file exists once `create` returns, whatever
    /// happens next: a commit that goes on after a failed folder sync writes into it rather than
    /// making it again (`exists`), and syncs the folder before its own root.
    mutating func createSlot(_ slot: UInt64, _ file: [UInt8]) throws {
        try writeUnlockRecord()
        try storage.create(try name(slot), contents: file, durable: true)
        allocator.markCreated(slot)
        createdSinceCommit = true
        try storage.syncFolder()
        createdSinceCommit = false
    }

    /// A join's slot (`JoinStandIns`), or a new vault's whose group 0 was made before its root
    /// (`slotStandIns`): written into its stand-in, synced, and renamed to its name, which shows
    /// it whole. False where there is no stand-in, or the slot is there.
    mutating func writeThroughStandIn(_ slot: UInt64, _ file: [UInt8]) throws -> Bool {
        try writeUnlockRecord()
        guard let standIns = slotStandIns ?? joinStandIns?.slots, slot < standIns.count else { return false }
        let standIn = standIns[Int(slot)], slotName = try name(slot)
        guard try storage.entryExists(standIn), try !storage.entryExists(slotName) else { return false }
        try storage.write(standIn, offset: 0, bytes: file)
        try storage.sync([standIn])
        try storage.rename(standIn, to: slotName)
        allocator.markCreated(slot)
        try storage.syncFolder()
        return true
    }

    /// After a join's root and its copy: the record goes from its stand-in to its name (unless
    /// it went before the root), and the pattern opens the vault from then on.
    mutating func nameJoinRecord() throws {
        try renameRecordFromStandIn()
        joinStandIns = nil
    }

    private mutating func renameRecordFromStandIn() throws {
        guard let record = recordInStandIn else { return }
        try storage.rename(record.standIn, to: record.name)
        try storage.syncFolder()
        recordInStandIn = nil
    }

    /// Writes a root into its slot and syncs it (the commit point): in place, or as a new file
    /// the first time. `copy`: the root sealed for the other slot, which a held group 0 is made
    /// with; returns whether it was written.
    @discardableResult
    mutating func writeSlot(_ slot: UInt64, _ file: [UInt8], copy: [UInt8]? = nil) throws -> Bool {
        if heldGroupZero != nil {
            guard let copy else { preconditionFailure("a held group 0 is made with both slots") }
            try createGroupZero(root: slot, file, copy: copy)
            return true
        }
        if try writeThroughStandIn(slot, file) { return false }
        let slotName = try name(slot)
        // A device that joined a vault (format 2) owns no slot numbers, and a device that follows
        // a withdrawal writes its root at new slot names (FORMAT.md §14.8): its slots are made here.
        if try allocator.needsCreate(slot) || !storage.entryExists(slotName) {
            try createSlot(slot, file)
            return false
        }
        try storage.write(slotName, offset: 0, bytes: file)
        try storage.sync([slotName])
        return false
    }

    /// After the commit point: the released files go.
    mutating func removeReleased(_ releasing: [UInt64]) throws {
        for number in releasing { try storage.remove(try name(number)) }
        if !releasing.isEmpty { try storage.syncFolder() }
        releasingFiles = []
    }

    // MARK: A new vault's group 0 (docs/FORMAT.md §3.3, "A new vault's first commit")

    /// The files a new vault's first commit stores into its group 0, by number, held until the
    /// commit point makes the group whole with the unlock record and the slots; nil when not
    /// holding (`holdGroupZero`).
    private var heldGroupZero: [UInt64: [UInt8]]?

    /// A new vault (format 2, made on this device; not a join, whose group 0 comes down whole,
    /// §13.12): its group 0 appears whole, the slots' files with it (`makeGroupZero`).
    var makesGroupZeroWhole = false

    /// Device 0's numbers 0 and 1 at their names (a slot is named from RL, not from them): the
    /// files a new vault's group 0 made before its root holds for the slots, each renamed to its
    /// slot once it holds the root or its copy (`writeThroughStandIn`).
    private(set) var slotStandIns: [String]?

    /// At the start of a new vault's first commit, before anything of the vault is on disk (its
    /// unlock record still pending; not a join, whose group 0 comes down whole, §13.12): group 0
    /// is held, so that the storage's count moves by 16 at once.
    mutating func holdGroupZero() {
        guard heldGroupZero == nil, pendingUnlock != nil, joinStandIns == nil, !createdSinceCommit else { return }
        heldGroupZero = [:]
    }

    /// Group 0 made whole before the root (`makeGroupZero`): when the commit needs another
    /// group first (the record comes before it, §9.3), or fails.
    mutating func releaseGroupZero() throws {
        guard heldGroupZero != nil else { return }
        try makeGroupZero()
    }

    /// A new vault's group 0 made whole before its root (docs/FORMAT.md §3.3): the record, what
    /// the commit holds, `random(F)` in the rest, and random files at the slots' stand-ins, in one
    /// step; the root and its copy go through the stand-ins. Nothing is at a slot's name until it
    /// holds a root: a cut before leaves what a first commit cut before its root always left (the
    /// record, no slot), which the next open removes (§13.9), stand-ins with it.
    private mutating func makeGroupZero() throws {
        let held = heldGroupZero != nil
        if !held { heldGroupZero = [:] }
        do {
            try fillGroupZero()
            let standIns = try (0..<UInt64(Format.indexSlotCount)).map { try secrets.standInName($0) }
            try createGroupZero(try standIns.map { ($0, try random.bytes(Format.fileSize)) })
            slotStandIns = standIns
        } catch {
            // Nothing was held: the record is still pending, and the next need tries again.
            if !held { heldGroupZero = nil }
            throw error
        }
    }

    /// After a first commit that wrote no root (nothing changed, or it failed): what it stored
    /// goes to disk as before; with nothing stored the record stays pending.
    mutating func endGroupZeroHold() throws {
        if heldGroupZero?.isEmpty == true { heldGroupZero = nil }
        try releaseGroupZero()
    }

    /// `random(F)` for the files of a held group 0 that nothing was stored into, drawn where
    /// `createUnwrittenFiles` draws them for any other group (in number order, before the
    /// root's seal), so that a deterministic stream writes the bytes it wrote before the group
    /// was held (TinyStorageVectorTests). Something not ours at a name (R-SEC-4) is left alone
    /// and its number never handed out, as `createRandomFiles` does.
    private mutating func fillGroupZero() throws {
        guard var held = heldGroupZero else { return }
        for number in allocator.unwritten.sorted() where number >= Format.indexSlotCount && number < Format.groupSize && held[number] == nil {
            if try storage.entryExists(try name(number)) {
                allocator.markCreated(number)
                continue
            }
            held[number] = try random.bytes(Format.fileSize)
        }
        heldGroupZero = held
    }

    /// The commit point of a held group 0: the root at `slot`, its `copy` at the other slot,
    /// with the group (`createGroupZero`). Each prefix of the links is a state the order before
    /// held passed through (record, files, root, copy), so the leftovers of §9.3 need nothing new.
    private mutating func createGroupZero(root slot: UInt64, _ root: [UInt8], copy: [UInt8]) throws {
        let other = 1 - slot
        try createGroupZero([(try name(slot), root), (try name(other), copy)])
        for number in [slot, other] { allocator.markCreated(number) }
    }

    /// A held group 0's files, each on disk, named in a row: the record first, then the stored
    /// files and the fills (`fillGroupZero`), then `slots` (the two slots, or their stand-ins).
    private mutating func createGroupZero(_ slots: [(name: String, contents: [UInt8])]) throws {
        try fillGroupZero()
        let held = heldGroupZero ?? [:]
        var files: [(name: String, contents: [UInt8])] = []
        if let unlock = pendingUnlock { files.append((unlock.name, unlock.file)) }
        for (number, file) in held.sorted(by: { $0.key < $1.key }) { files.append((try name(number), file)) }
        try storage.createDurableGroup(files + slots)
        heldGroupZero = nil
        pendingUnlock = nil
        for number in held.keys.sorted() { allocator.markCreated(number) }
        try storage.syncFolder()
    }
}

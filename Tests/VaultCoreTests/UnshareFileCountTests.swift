import DotSafeTestSupport
import Foundation
import Synchronization
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// R-BLK-5 during the owner's own withdrawal (docs/FORMAT.md §14.8, "The file count of a
/// withdrawal"): the new root's two slots are free files of the vault renamed to RL''s slot
/// names, and after the switch the old slots go into those numbers, so the storage's file count
/// is a multiple of 16 before every mutation of a whole `unshare`, at every cut of one (a
/// process crash and a power loss after each of its mutations) and after the next writable open,
/// which opens the vault with its content under the old keys (a cut before the root at RL'
/// exists: undone) or the new ones (finished).
@Suite struct UnshareFileCountTests {
    typealias Unshare = VaultUnshareTests
    typealias Sharing = VaultSharingTests

    /// A with a file, shared with B (seed 2) and C (seed 3); with `free` set, shared with further
    /// codes (seeds 4 up) until the committed root has that many free files: a share takes one
    /// (its grant) and its commit a page for the one it frees, so the count comes down one at
    /// a time, to 1: the share that takes the last one makes a group for its page. (0 is a
    /// storage with 1, whose free file the withdrawing session holds: `takeFreeFiles`.)
    static func storage(free: Int?) throws -> (storage: SimulatedStorageFolder, a: ContactCode, b: ContactCode) {
        let (storage, codeA, codeB, _) = try Unshare.sharedWithTwo()
        guard let free = free.map({ max($0, 1) }) else { return (storage, codeA, codeB) }
        var seed: UInt8 = 4, seen: [Int] = []
        while true {
            let a = try TestVaults.open(storage, seed: 1)
            let left = a.state.withLock { $0.writer.allocator.freeCount }
            seen.append(left)
            try #require(left >= free && seed < 40, "the vault's free files after each share: \(seen), not down to \(free)")
            if left == free {
                try a.lock()
                return (storage, codeA, codeB)
            }
            try a.lock()
            let code = try Sharing.code(storage, seed: seed)
            let again = try TestVaults.open(storage, seed: 1)
            try again.share(with: code)
            try again.lock()
            seed += 1
        }
    }

    /// A open for the withdrawal, with `free` free files: for 0, its session holds the one free
    /// file of the storage (as a sync's staged download does), so the withdrawal starts with none.
    static func open(_ storage: any StorageFolder, free: Int?) throws -> Vault {
        let a = try TestVaults.open(storage, seed: 1)
        try a.state.withLock { state in
            if free == 0, let number = state.writer.allocator.freeNumbers.first {
                let held = state.writer.allocator.reserve(number)
                #expect(held)
            }
            let left = state.writer.allocator.freeCount
            try #require(free.map { $0 == left } ?? (left >= 2), "\(left) free files, not \(free.map(String.init) ?? "2 or more")")
        }
        return a
    }

    /// A durable copy of `storage`: every cut starts from the same vault.
    static func copy(_ storage: SimulatedStorageFolder) throws -> SimulatedStorageFolder {
        let copy = SimulatedStorageFolder()
        for (name, bytes) in storage.snapshot { try copy.create(name, contents: bytes, durable: true) }
        try copy.syncFolder()
        return copy
    }

    /// The owner's record: its vault key and whether it announces a rotation (tag 1024) whose
    /// root exists at RL''s names (then the next writable open finishes it).
    static func record(_ storage: SimulatedStorageFolder) throws -> (vaultKey: [UInt8], goesOn: Bool) {
        let record = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(1))).record
        guard let value = record.optional.first(where: { $0.tag == UnlockRecord.Tag.rotation })?.value else { return (record.vaultKey, false) }
        let vaultKey = try SecretBytes(copying: Array(value[..<Format.keySize]))
        let locator = try SecretBytes(copying: Array(value[Format.keySize...]))
        let root = try VaultRotation.newestRoot(storage: storage, rootLocator: locator, rootKey: try FormatTwoKeys.rootKey(vaultKey: vaultKey),
                                                   readsIndexThree: false)
        return (record.vaultKey, root != nil)
    }

    /// A whole withdrawal through a folder that notes the file count before each mutation, and
    /// the mutations of the simulated storage that each `createGroup` spans (a group's files are
    /// made one after the other: a cut inside leaves a part, which the next open removes).
    static func wholeWithdrawal(_ start: SimulatedStorageFolder, codeA: ContactCode, codeB: ContactCode,
                                free: Int?) throws -> (mutations: Int, inGroups: Set<Int>) {
        let storage = try copy(start)
        let before = storage.snapshot.count
        let counting = StepCounts(storage)
        let a = try open(counting, free: free)
        let start = storage.mutationCount
        try a.unshare(with: codeB)
        let mutations = storage.mutationCount - start
        try a.lock()
        let off = counting.steps.filter { $0.count % Format.groupSize != 0 }
        #expect(off.isEmpty, "the count before these mutations: \(off.prefix(6)) of \(counting.steps.map(\.operation))")
        #expect(storage.snapshot.count == before + (free.map { $0 < 2 } == true ? Format.groupSize : 0),
                "\(before) files before, \(storage.snapshot.count) after")
        #expect(throws: SharingError.accessEnded) { try Sharing.open(storage, seed: 2, by: codeA) }
        return (mutations, Set(counting.groups.flatMap { ($0.lowerBound - start + 1)..<($0.upperBound - start) }))
    }

    /// Cuts the withdrawal after each of its mutations; see the suite.
    func cutEverywhere(_ crash: CrashTests.Crash, free: Int?) throws {
        let (start, codeA, codeB) = try Self.storage(free: free)
        let whole = try Self.wholeWithdrawal(start, codeA: codeA, codeB: codeB, free: free)
        var undone = 0, finished = 0
        for mutations in 0...whole.mutations {
            let storage = try Self.copy(start)
            let oldKey = try Self.record(storage).vaultKey
            let a = try Self.open(storage, free: free)
            let done = try crash.cut(storage, afterMutations: mutations) { try a.unshare(with: codeB) }
            let cut = "\(crash) cut after mutation \(mutations) of \(whole.mutations)"
            let count = storage.snapshot.count
            #expect(count % Format.groupSize == 0 || whole.inGroups.contains(mutations), "\(cut): \(count) files")
            let atCut = try Self.record(storage)
            let finishes = atCut.vaultKey != oldKey || atCut.goesOn
            let atCrash = try TestVaults.open(storage, seed: 1, readOnly: true)
            #expect(try atCrash.readAll("hello") == Array("from A".utf8), "\(cut)")
            let report = try atCrash.check()
            // A group made for the lending and cut before the commit that owns it: leftovers of
            // a crash (§9.3), which the writable open below removes.
            let leftovers = free.map { $0 < 2 } == true && report.damagedItems.isEmpty
                && report.storageProblems.allSatisfy { $0.hasPrefix("stray file ") && $0.hasSuffix(" of the vault outside its groups") }
            #expect(report.isClean || leftovers || whole.inGroups.contains(mutations), "\(cut): \(report.storageProblems)")
            try atCrash.lock()

            let reopened = try TestVaults.open(storage, seed: 1)
            #expect(try reopened.readAll("hello") == Array("from A".utf8), "\(cut)")
            #expect(storage.snapshot.count % Format.groupSize == 0, "\(cut): \(storage.snapshot.count) files after the open")
            let checked = try reopened.check()
            #expect(checked.isClean, "\(cut): \(checked.storageProblems) \(checked.damagedItems.map(\.problems))")
            try reopened.makeFile("later", [UInt8(mutations & 0xff)])
            try reopened.lock()
            try checkStorageInvariants(storage)
            let newKey = try Self.record(storage).vaultKey
            #expect((newKey != oldKey) == finishes, "\(cut): the keys are \(newKey == oldKey ? "old" : "new")")
            if finishes {
                #expect(throws: SharingError.accessEnded) { try Sharing.open(storage, seed: 2, by: codeA) }
                finished += 1
            } else {
                let b = try Sharing.open(storage, seed: 2, by: codeA)
                #expect(try b.readAll("later") == [UInt8(mutations & 0xff)], "\(cut)")
                try b.lock()
                undone += 1
            }
            let c = try Sharing.open(storage, seed: 3, by: codeA)
            #expect(try c.readAll("later") == [UInt8(mutations & 0xff)], "\(cut)")
            try c.lock()
            if done { #expect(finishes, "\(cut): the withdrawal returned") }
        }
        #expect(undone > 0 && finished > 1, "\(whole.mutations) mutations, \(undone) undone, \(finished) finished")
    }

    @Test(arguments: [CrashTests.Crash.process, .power])
    func aWithdrawalKeepsTheCountAtEveryCut(_ crash: CrashTests.Crash) throws {
        try cutEverywhere(crash, free: nil)
    }

    /// Fewer than two free files when the withdrawal starts: its first commit, under the old
    /// keys, makes a group (16 files, whole) and the slots take two of its files.
    @Test(arguments: [0, 1], [CrashTests.Crash.process, .power])
    func aWithdrawalWithFewFreeFilesMakesAGroupFirst(free: Int, crash: CrashTests.Crash) throws {
        try cutEverywhere(crash, free: free)
    }
}

/// A storage folder that notes, before each mutation, the file count, and the simulated
/// storage's mutations that each `createGroup` spans.
final class StepCounts: ForwardingStorageFolder, @unchecked Sendable {
    // @unchecked: used by one vault on one thread at a time; `state` is behind its lock anyway.
    private let state = Mutex<(steps: [(operation: String, count: Int)], groups: [Range<Int>])>(([], []))
    private let simulated: SimulatedStorageFolder

    init(_ storage: SimulatedStorageFolder) {
        simulated = storage
        super.init(storage)
    }

    var steps: [(operation: String, count: Int)] { state.withLock { $0.steps } }
    var groups: [Range<Int>] { state.withLock { $0.groups } }

    private func note(_ operation: String) throws {
        let count = try base.listFiles().count
        state.withLock { $0.steps.append((operation, count)) }
    }

    override func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        try note("create")
        try super.create(name, contents: contents, durable: durable)
    }
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        try note("createGroup")
        let start = simulated.mutationCount
        try super.createGroup(files)
        let end = simulated.mutationCount
        state.withLock { $0.groups.append(start..<end) }
    }
    override func write(_ name: String, offset: Int, bytes: [UInt8]) throws {
        try note("write")
        try super.write(name, offset: offset, bytes: bytes)
    }
    override func sync(_ names: [String]) throws {
        try note("sync")
        try super.sync(names)
    }
    override func syncFolder() throws {
        try note("syncFolder")
        try super.syncFolder()
    }
    override func remove(_ name: String) throws {
        try note("remove")
        try super.remove(name)
    }
    override func rename(_ name: String, to newName: String) throws {
        try note("rename")
        try super.rename(name, to: newName)
    }
    override func replace(_ name: String, contents: [UInt8]) throws {
        try note("replace")
        try super.replace(name, contents: contents)
    }
}

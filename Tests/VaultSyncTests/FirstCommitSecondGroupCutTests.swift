import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// A new vault's first commit that needs another group before its root (docs/FORMAT.md §3.3,
/// "A new vault's first commit"; ADVERSARIES.md: the copier, the crash): many files at once,
/// whose packs do not fit in group 0, or a large file whose chunks are written behind before the
/// commit. Its group 0 appears whole too, before the other groups, so the storage's count of
/// files moves in steps of 16 at every mutation. Cut at any mutation, the next open finds a new
/// vault with nothing left, or the vault with everything; never a refusal.
@Suite(.serialized) struct FirstCommitSecondGroupCutTests {
    enum Write: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// 20 files of 150 KB: one pack each, more than group 0's free files.
        case manyFiles
        /// 6 MiB in pieces of 1 MiB: its chunks are written behind as they fill.
        case largeFile

        var testDescription: String { rawValue }

        var files: [(name: String, bytes: [UInt8])] {
            switch self {
            case .manyFiles: (0..<20).map { ("file-\($0)", Self.content(150_000, seed: $0)) }
            case .largeFile: [("big", Self.content(6 << 20, seed: 99))]
            }
        }

        static func content(_ count: Int, seed: Int) -> [UInt8] {
            var generator = SeededGenerator(seed: UInt64(seed) + 1)
            let words = (0..<(count + 7) / 8).map { _ in generator.next() }
            return words.withUnsafeBytes { Array($0.prefix(count)) }
        }

        func run(_ vault: Vault) throws {
            for (name, bytes) in files {
                let id = try vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
                for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
                    try vault.write(id, offset: UInt64(start), bytes: Array(bytes[start..<min(start + (1 << 20), bytes.count)]))
                }
            }
            try vault.commit()
        }

        /// The files the vault does not hold as written; empty when it holds them all.
        func missing(_ vault: Vault) -> [String] {
            files.compactMap { name, bytes in
                guard let id = try? vault.lookup(Vault.rootID, Array(name.utf8)),
                      let read = try? vault.read(id, offset: 0, count: bytes.count + 1), read == bytes else { return name }
                return nil
            }
        }
    }

    /// The mutations before which the count is not a multiple of 16. A run of removes counts as
    /// one step, as a group's links do: a new group that the commit did not use is removed
    /// before its root (`dropUnusedNewGroups`), its files unlinked in a row (§9.2).
    static func uneven(_ counting: CutStorageFolder) -> [String] {
        let done = counting.done, counts = counting.countsBefore
        return counts.indices.filter { index in
            counts[index] % Format.groupSize != 0 && !(index > 0 && done[index] == "remove" && done[index - 1] == "remove")
        }.map { "\($0) (\(done[$0])): \(counts[$0])" }
    }

    @Test(arguments: Write.allCases) func keepsWholeGroupsAtEveryMutation(_ write: Write) throws {
        let device = try SyncDevice("second-count-\(write.rawValue)")
        defer { device.finish() }
        let before = try StorageCount.files(device.folder)
        let counting = try device.reopen { CutStorageFolder($0, cutAt: nil, countsFiles: true) }
        try write.run(device.vault)
        let uneven = Self.uneven(counting)
        #expect(uneven.isEmpty, "files before mutation: \(uneven)")
        let after = try StorageCount.files(device.folder)
        #expect(after >= before + 2 * Format.groupSize, "the commit needed another group: \(before) to \(after) files")
        #expect(after % Format.groupSize == 0)
        try device.reopen()
        #expect(write.missing(device.vault).isEmpty)
        #expect(try StorageCount.files(device.folder) == after)
    }

    @Test(arguments: Write.allCases) func cutAtAnyMutationOpensWithWholeGroupsAndNothingLeft(_ write: Write) throws {
        let counter = try SyncDevice("second-cut-count-\(write.rawValue)")
        defer { counter.finish() }
        let counting = try counter.reopen { CutStorageFolder($0, cutAt: nil) }
        let opened = counting.mutations
        let start = try StorageCount.files(counter.folder)
        try write.run(counter.vault)
        let mutations = counting.mutations, whole = try StorageCount.files(counter.folder) - start
        #expect(mutations > opened)

        var failures: [String] = [], committed = 0
        for cut in opened..<mutations {
            let device = try SyncDevice("second-cut-\(write.rawValue)-\(cut)")
            defer { device.finish() }
            let before = try StorageCount.files(device.folder)
            // Not cut at all where the cut fell on a step after the commit point that may fail
            // (the copy's write, §13.9), or the write-behinds ran in another order.
            let (failed, files) = try FirstCommitCountCutTests.cutAndReopen(device, at: cut, before: before) { _ in
                try write.run(device.vault)
            }
            failures += failed
            guard device.reopenFailure == nil else { continue }
            if let files {
                committed += 1
                let missing = write.missing(device.vault)
                if !missing.isEmpty { failures.append("cut \(cut): opened without \(missing)") }
                // Cut between the root's slot and its copy's: the copy's stand-in went to the
                // missing slot, no free file was lent to it (the stand-in would stay, over).
                let lent = device.vault.state.withLock { $0.writer.absentFreeNumbers }
                if !lent.isEmpty { failures.append("cut \(cut): free files \(lent) lent to a missing slot") }
                if files != before + whole { failures.append("cut \(cut): \(files) files, not \(before + whole)") }
            }
            // The next commit goes on from whatever the cut left, in whole groups.
            try device.write("second.txt", "second")
            try device.reopen()
            let after = try StorageCount.files(device.folder)
            if after % Format.groupSize != 0 { failures.append("cut \(cut): \(after) files after the next commit") }
            if (try? device.read("second.txt")) != "second" { failures.append("cut \(cut): second.txt lost") }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(committed > 0, "some cut came after the commit point")
    }

    /// A first commit that fails at its commit point (the disk full there once) makes what it
    /// held whole, as group 0, the slots through stand-ins; the next commit writes the root there.
    @Test func aFirstCommitThatFailsKeepsWholeGroupsAndTheNextCommits() throws {
        let device = try SyncDevice("second-fails")
        defer { device.finish() }
        let before = try StorageCount.files(device.folder)
        var counting: CutStorageFolder?
        let failing = try device.reopen { base in
            counting = CutStorageFolder(base, cutAt: nil, countsFiles: true)
            return FailingOnceStorageFolder(counting!)
        }
        do {
            try device.write("first.txt", "first")
            Issue.record("the first commit did not fail")
        } catch {
            // As the vault reports a storage that failed under it.
            #expect("\(error)".contains("\(StoreError.noSpace)"), "\(error)")
        }
        #expect(failing.failed, "the commit point failed")
        try device.vault.commit()
        let uneven = Self.uneven(counting!)
        #expect(uneven.isEmpty, "files before mutation: \(uneven)")
        #expect(try StorageCount.files(device.folder) == before + Format.groupSize)
        try device.reopen()
        #expect(try device.read("first.txt") == "first")
        #expect(try StorageCount.files(device.folder) == before + Format.groupSize)
    }
}

/// Refuses the first group made with its files synced (a new vault's group 0 at its commit
/// point) with ENOSPC, once; forwards everything else.
final class FailingOnceStorageFolder: ForwardingStorageFolder, @unchecked Sendable {
    private(set) var failed = false

    override func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        if !failed {
            failed = true
            throw StoreError.noSpace
        }
        try base.createDurableGroup(files)
    }
}

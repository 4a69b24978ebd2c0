import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore

/// A new vault's first commit keeps the storage's count of files in steps of 16 at every
/// instant (docs/FORMAT.md §3, §3.3 "A new group appears whole"; ADVERSARIES.md: the copier,
/// the crash): its group 0 (the unlock record, the stored files, the slots) appears whole, not
/// one file at a time. Cut at any mutation, the next open finds the vault (or a new one, before
/// the commit point), the count whole, nothing else left.
@Suite(.serialized) struct FirstCommitCountCutTests {
    static let text = String(repeating: "1", count: 1_000)

    @Test func aFirstCommitKeepsWholeGroupsAtEveryMutation() throws {
        let device = try SyncDevice("first-count")
        defer { device.finish() }
        let before = try StorageCount.files(device.folder)
        let counting = try device.reopen { CutStorageFolder($0, cutAt: nil, countsFiles: true) }
        try device.write("first.txt", Self.text)
        let uneven = zip(counting.done, counting.countsBefore).enumerated().filter { $0.element.1 % Format.groupSize != 0 }
        #expect(uneven.isEmpty, "files before mutation: \(uneven.map { "\($0.offset) (\($0.element.0)): \($0.element.1)" })")
        #expect(try StorageCount.files(device.folder) == before + Format.groupSize)
        try device.reopen()
        #expect(try device.read("first.txt") == Self.text)
    }

    @Test func aFirstCommitCutAtAnyMutationOpensWithWholeGroupsAndNothingLeft() throws {
        let counter = try SyncDevice("first-cut-count")
        defer { counter.finish() }
        let counting = try counter.reopen { CutStorageFolder($0, cutAt: nil) }
        // The open's own mutations (leftovers of a re-creation) come before the commit's.
        let opened = counting.mutations
        try counter.write("first.txt", Self.text)
        let mutations = counting.mutations
        #expect(mutations > opened)

        var failures: [String] = []
        for cut in opened..<mutations {
            let device = try SyncDevice("first-cut-\(cut)")
            defer { device.finish() }
            let before = try StorageCount.files(device.folder)
            let (failed, files) = try Self.cutAndReopen(device, at: cut, before: before) { cutting in
                #expect(cutting.mutations == opened, "the open's mutations")
                try device.write("first.txt", Self.text)
                failures.append("cut \(cut): the commit was not cut")
            }
            failures += failed
            guard device.reopenFailure == nil else { continue }
            if let files {
                if (try? device.read("first.txt")) != Self.text { failures.append("cut \(cut): opened without first.txt") }
                if files != before + Format.groupSize { failures.append("cut \(cut): \(files) files, not \(before + Format.groupSize)") }
            }
            // The next commit makes group 0 whole again, over whatever the cut left.
            try device.write("second.txt", Self.text)
            try device.reopen()
            let after = try StorageCount.files(device.folder)
            if after % Format.groupSize != 0 { failures.append("cut \(cut): \(after) files after the next commit") }
            if (try? device.read("second.txt")) != Self.text { failures.append("cut \(cut): second.txt lost") }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
    }

    /// `run` (a new vault's first commit) on `device` opened on a storage cut after `cut`
    /// mutations, as a process killed there; then the vault opened again from the disk. Returns
    /// what went wrong besides the cut (an error of another kind, an open that fails, a new vault
    /// whose storage does not hold the `before` files again: §9.3), and the storage's count of
    /// files when the vault opened with the commit.
    static func cutAndReopen(_ device: SyncDevice, at cut: Int, before: Int,
                             _ run: (CutStorageFolder) throws -> Void) throws -> (failures: [String], files: Int?) {
        let cutting = try device.reopen { CutStorageFolder($0, cutAt: cut) }
        var failures: [String] = []
        do { try run(cutting) } catch {
            // The cut, as the vault reports a storage that failed under it.
            if !"\(error)".contains("\(StoreError.simulatedCrash)") { failures.append("cut \(cut): \(error)") }
        }
        // `dotsafe fsck` right after the cut, before any writing open tidies up (a stand-in
        // left between the root's rename and its copy's too): nothing to report.
        device.vault.discard()
        let seen = try SyncDevice.readOnlyView(device.folder, seed: device.seed, sharedBy: device.sharedBy)
        if !seen.isEmpty { failures.append("cut \(cut): a read-only check saw \(seen)") }
        device.reopenAfterCrash()
        if let failure = device.reopenFailure { return (failures + ["cut \(cut): does not open: \(failure)"], nil) }
        let files = try StorageCount.files(device.folder)
        guard device.vault.isNew else { return (failures, files) }
        // Before the commit point: a new vault, and nothing of the cut commit stays.
        if files != before { failures.append("cut \(cut): new, \(files) files, not \(before)") }
        return (failures, nil)
    }
}

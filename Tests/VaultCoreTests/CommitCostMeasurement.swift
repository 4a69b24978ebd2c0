@testable import VaultCore
import Foundation
import Testing

/// What a commit and an open cost in a vault of many small files, index 2 against index 3 (issue 17):
/// printed, not asserted (timings on a shared machine say nothing in a test; `IndexThreeNamesJournalTests`
/// asserts the counts). Run by `tools/commit-cost`; skipped in every other run.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["DOTSAFE_COMMIT_COST"] != nil))
struct CommitCostMeasurement {
    static let environment = ProcessInfo.processInfo.environment

    @Test(arguments: [false, true]) func oneFileCommit(indexThree: Bool) throws {
        let count = Int(Self.environment["DOTSAFE_COMMIT_COST"] ?? "") ?? 100_000
        let rounds = Int(Self.environment["DOTSAFE_COMMIT_COST_ROUNDS"] ?? "") ?? 5
        let label = "index \(indexThree ? 3 : 2), \(count) files"
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, indexThree: indexThree)
        defer { try? vault.lock() }
        try OneFileCommitScaleTests.makeSmallFiles(count, in: vault)
        var start = Date()
        try vault.commit()
        print("commit-cost: \(label): first commit \(String(format: "%.3f", Date().timeIntervalSince(start))) s")
        var times: [Double] = []
        for round in 0..<rounds {
            _ = try vault.makeFile("x-\(round)", TestVaults.content(100, seed: 7))
            start = Date()
            try vault.commit()
            times.append(Date().timeIntervalSince(start))
        }
        let median = times.sorted()[times.count / 2]
        print("commit-cost: \(label): one-file commit, median of \(rounds): \(String(format: "%.1f", median * 1000)) ms")
        // The open reads every page and, on index 3, checks the records against the tree.
        try vault.lock()
        start = Date()
        vault = try TestVaults.open(storage, indexThree: indexThree, onDemand: false)
        print("commit-cost: \(label): open \(String(format: "%.3f", Date().timeIntervalSince(start))) s")
        guard indexThree else { return }
        // Held in part (step 6c): the open, then a file added to one folder and committed.
        try vault.lock()
        start = Date()
        vault = try TestVaults.open(storage, indexThree: true, onDemand: true)
        print("commit-cost: \(label): open in part \(String(format: "%.4f", Date().timeIntervalSince(start))) s, \(vault.statistics.leafLoads) leaves")
        start = Date()
        let folder = try vault.lookup(Vault.rootID, Array("d5".utf8))
        _ = try vault.makeFile("in-part", TestVaults.content(100, seed: 7), in: folder)
        try vault.commit()
        print("commit-cost: \(label): in part, a file added and committed \(String(format: "%.1f", Date().timeIntervalSince(start) * 1000)) ms, \(vault.statistics.leafLoads) leaves")
    }
}

import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// A pack's free tail takes new members in place (FORMAT.md §7.2): below its reserved end
/// nothing is placed, but that end follows the local roots, and the member a published remote
/// root still references at the tail can be deleted here and its bytes written over by the
/// next small file. That pack goes up before the root that no longer references the member,
/// so a sync cut between the two (or another device reading in between) leaves the remote root
/// pointing at bytes that are gone.
@Suite(.serialized) struct FreedTailSyncTests {
    static func text(_ letter: Character) -> String { String(repeating: letter, count: 900) }

    @Test func aMemberPublishedAtAPacksTailStillReadsWhenItsPlaceIsReusedHere() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }

        try first.write("x.txt", Self.text("x"))
        try first.write("y.txt", Self.text("y"))
        try first.sync(remote)
        // y was the pack's last member: deleted, its place is the free tail, which z takes.
        try first.vault.remove(Array("y.txt".utf8), from: Vault.rootID)
        try first.vault.commit()
        try first.write("z.txt", Self.text("z"))
        // The next sync of the first device dies after its uploads, before its root.
        #expect(throws: SyncDevice.Stop.self) { try first.sync(remote, stoppingAt: "root") }

        let down = try second.sync(remote)
        #expect(down.conflicts == 0, "\(down.actions)")
        #expect(try second.read("y.txt") == Self.text("y"), "the remote root still lists y")
        #expect(try second.read("x.txt") == Self.text("x"))
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")

        try first.sync(remote)
        try second.sync(remote)
        let expected: [String: String] = [
            "docs/": "", "docs/plan.txt": "plan v1", "notes.txt": "notes v1", "x.txt": Self.text("x"), "z.txt": Self.text("z"),
        ]
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }
}

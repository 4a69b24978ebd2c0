import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// docs/FORMAT.md §14.8, "The file count of a follow": on any device (the owner's first, device
/// 0, as well as one that joined by sync), a free file missing while the storage's count is a multiple of 16 was lent to a slot of a follow cut
/// short (its file is at another name): fsck does not report it and the commits do not make it
/// again, so the count stays whole. One missing while the count is not whole (someone removed
/// it) is reported and made again, which puts the count right, as before.
@Suite(.serialized) struct LentFreeFileSyncTests {
    typealias Shared = SharedSyncTests

    /// A's vault synced; its laptop B joined (device 1) and committed a file. A, B, the device
    /// `device` names ("laptop": B, "first": A, device 0), the number and name of its lowest free
    /// file.
    static func laptop(_ remote: TestRemote, device: String) throws -> (a: SyncDevice, b: SyncDevice, device: SyncDevice,
                                                                        number: UInt64, name: String) {
        let a = try SyncDevice("alice", seed: 0xA1)
        try a.write("hello.txt", "hello from alice")
        try a.sync(remote)
        let b = try SyncDevice("alice-laptop", seed: 0xA1)
        try b.sync(remote)
        try b.write("laptop.txt", "from the laptop")
        try b.reopen()
        try a.reopen()
        let chosen = device == "first" ? a : b
        let (number, name) = try chosen.vault.state.withLock { state in
            #expect((state.writer.allocator.base != 0) == (chosen === b), "B joined as a device of its own, A is device 0")
            let number = try #require(state.writer.allocator.freeNumbers.first)
            return (number, try state.writer.name(number))
        }
        return (a, b, chosen, number, name)
    }

    static let big = (0..<(3 * Format.payloadSize)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

    @Test(arguments: ["laptop", "first"])
    func aFreeFileLentToASlotIsNotMadeAgain(device: String) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, laptop, b, number, name) = try Self.laptop(remote, device: device)
        defer { a.finish(); laptop.finish() }
        // As a follow's lending does: the file goes to another name, the count stays.
        let folder = b.folder + "/"
        try FileManager.default.moveItem(atPath: folder + name, toPath: folder + FileName.encode(Array(repeating: 0x5A, count: Format.nameBytes)))
        let report = try b.vault.check()
        #expect(report.isClean, "\(report.storageProblems)")
        try b.write("big.bin", "")
        try b.write("big.bin", bytes: Self.big)
        try b.reopen()
        #expect(!FileManager.default.fileExists(atPath: folder + name), "file \(number) was not made again")
        #expect(try Shared.files(b.folder).count % Format.groupSize == 0)
        #expect(try b.vault.check().isClean)
        #expect(try b === a ? b.read("hello.txt") == "hello from alice" : b.read("laptop.txt") == "from the laptop")
    }

    @Test(arguments: ["laptop", "first"])
    func aFreeFileRemovedIsReportedAndMadeAgain(device: String) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, laptop, b, number, name) = try Self.laptop(remote, device: device)
        defer { a.finish(); laptop.finish() }
        try FileManager.default.removeItem(atPath: b.folder + "/" + name)
        let report = try b.vault.check()
        #expect(report.storageProblems.contains("file \(number) of the vault is missing"), "\(report.storageProblems)")
        #expect(report.storageProblems.contains { $0.hasSuffix("files, not a multiple of \(Format.groupSize)") }, "\(report.storageProblems)")
        try b.write("big.bin", "")
        try b.write("big.bin", bytes: Self.big)
        try b.reopen()
        #expect(FileManager.default.fileExists(atPath: b.folder + "/" + name), "file \(number) was made again")
        #expect(try Shared.files(b.folder).count % Format.groupSize == 0)
        #expect(try b.vault.check().isClean)
    }
}

import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultFileSystem
import VaultFUSE

/// The kernel's page cache of a file is kept across opens while the file's content has not
/// changed since it was cached (FUSE's keep_cache; issue 17, "second pass"), and dropped at the
/// next open when it has: by a write through the mount, or by a change the kernel did not make
/// (as a sync would make one), which the kernel could not otherwise know of while it keeps the
/// file's attributes (60 s here, so that no attribute refresh hides a stale page).
@Suite(.serialized) struct PageCacheTests {
    static let options = FUSEMount.Options(attributeTimeout: 60, entryTimeout: 60)

    @Test func aSecondReadAsksTheDaemonNothingAndAChangeIsNeverReadStale() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault, options: Self.options) { mount throws in
            let fs = mount.fileSystem
            let path = vault + "/f"
            var bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            try Self.write(path, bytes, at: 0, flags: O_CREAT | O_TRUNC)
            #expect(try Self.readAll(path) == bytes)
            let cached = fs.readCount
            #expect(try Self.readAll(path) == bytes)
            #expect(fs.readCount == cached, "a second read of an unchanged file after close and open asks the daemon nothing")

            // Through the mount, from another descriptor: read back new.
            let patch = [UInt8](repeating: 0xAB, count: 10_000)
            try Self.write(path, patch, at: 5_000)
            bytes.replaceSubrange(5_000..<15_000, with: patch)
            #expect(try Self.readAll(path) == bytes)
            _ = try shell("dd if=/dev/zero of=f bs=4096 seek=100 count=3 conv=notrunc status=none", in: vault)
            bytes.replaceSubrange(409_600..<421_888, with: [UInt8](repeating: 0, count: 12_288))
            #expect(try Self.readAll(path) == bytes, "dd's zeros are read back, not the cached bytes")

            // Behind the kernel: the vault changes while the kernel holds the file's pages and
            // attributes. The next open drops the pages.
            var status = stat()
            try #require(stat(path, &status) == 0)
            let id = UInt64(status.st_ino)
            let other = [UInt8](repeating: 0x5C, count: 100_000)
            try fs.vault.write(id, offset: 300_000, bytes: other)
            bytes.replaceSubrange(300_000..<400_000, with: other)
            let before = fs.readCount
            #expect(try Self.readAll(path) == bytes, "a change the kernel did not make is never read stale")
            #expect(fs.readCount > before)
            #expect(try Self.readAll(path) == bytes)
        }
    }

    static func write(_ path: String, _ bytes: [UInt8], at offset: Int, flags: Int32 = 0) throws {
        let descriptor = open(path, O_WRONLY | flags, 0o644)
        guard descriptor >= 0 else { throw HarnessError("open \(path): errno \(errno)") }
        defer { close(descriptor) }
        guard pwrite(descriptor, bytes, bytes.count, off_t(offset)) == bytes.count else { throw HarnessError("pwrite: errno \(errno)") }
    }

    static func readAll(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw HarnessError("cannot read \(path)") }
        return [UInt8](data)
    }
}

import DotSafeTestSupport
import Foundation
import Testing

/// Holes as the tools see them on a real mount: `du`, `stat %b`, `cp --sparse=always`, and
/// lseek's SEEK_DATA / SEEK_HOLE (chunk granularity, 256 KiB); and `df`'s free against
/// available space.
@Suite(.serialized) struct SparseToolTests {
    static let chunk = 262_144
    static let gibibyte = 1 << 30

    /// SEEK_DATA and SEEK_HOLE from each offset, as `offset:DATA:HOLE` with ENXIO as "-".
    static func seeks(_ file: String, from offsets: [Int], in folder: String) throws -> String {
        let script = """
            import errno, os, sys
            fd = os.open(sys.argv[1], os.O_RDONLY)
            def at(offset, whence):
                try: return str(os.lseek(fd, offset, whence))
                except OSError as e:
                    if e.errno != errno.ENXIO: raise
                    return "-"
            print(" ".join("%d:%s:%s" % (o, at(o, os.SEEK_DATA), at(o, os.SEEK_HOLE)) for o in map(int, sys.argv[2:])))
            """
        let result = try run(["python3", "-c", script, file] + offsets.map(String.init), in: folder)
        #expect(result.succeeded, "\(result.error)")
        return result.output
    }

    @Test func holesCostNoBlocksAndSeekFindsDataAndHoles() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let (chunk, gib) = (Self.chunk, Self.gibibyte)
        let offsets = [0, 4 * chunk - 1, 4 * chunk + 5, 5 * chunk, gib - chunk - 1, gib - 10, gib, gib + 1]
        // Data in chunk 4 and in the last chunk, 4095: each counts whole, 256 KiB.
        let expected = "0:\(4 * chunk):0 \(4 * chunk - 1):\(4 * chunk):\(4 * chunk - 1) \(4 * chunk + 5):\(4 * chunk + 5):\(5 * chunk) "
            + "\(5 * chunk):\(gib - chunk):\(5 * chunk) \(gib - chunk - 1):\(gib - chunk):\(gib - chunk - 1) \(gib - 10):\(gib - 10):\(gib) "
            + "\(gib):-:- \(gib + 1):-:-\n"
        try harness.withMount(at: vault) { _ throws in
            try shell("truncate -s 1G sparse && echo hi > small", in: vault)
            #expect(try shell("stat -c '%s %b' sparse small && du -k sparse", in: vault) == "1073741824 0\n3 8\n0\tsparse\n")
            #expect(try Self.seeks("sparse", from: [0, 5], in: vault) == "0:-:0 5:-:5\n")
            try shell("printf abc | dd of=sparse bs=1 seek=\(4 * chunk + 10) conv=notrunc status=none", in: vault)
            try shell("printf end | dd of=sparse bs=1 seek=\(gib - 3) conv=notrunc status=none", in: vault)
            // Still in memory, not stored: counted all the same.
            #expect(try shell("stat -c '%b' sparse && du -k sparse", in: vault) == "1024\n512\tsparse\n")
            #expect(try Self.seeks("sparse", from: offsets, in: vault) == expected)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("stat -c '%s %b' sparse small", in: vault) == "1073741824 1024\n3 8\n")
            #expect(try Self.seeks("sparse", from: offsets, in: vault) == expected)
            // cp finds the data by SEEK_DATA and leaves the holes holes.
            try shell("cp --sparse=always sparse \(harness.base)/copy && cmp sparse \(harness.base)/copy", in: vault)
            let copied = Int(try shell("du -k \(harness.base)/copy | cut -f1").trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(copied.map { $0 <= 1024 } ?? false, "du -k of the copy: \(String(describing: copied))")
            // Truncated down into chunk 4, then up again: only chunk 4 is left.
            try shell("truncate -s \(4 * chunk + 100) sparse && truncate -s 1G sparse", in: vault)
            #expect(try shell("stat -c '%b' sparse && tail -c 3 sparse | od -An -c", in: vault) == "512\n  \\0  \\0  \\0\n")
            #expect(try Self.seeks("sparse", from: [0, 5 * chunk], in: vault) == "0:\(4 * chunk):0 \(5 * chunk):-:\(5 * chunk)\n")
        }
    }

    @Test func dfSeesTheStorageDisksFreeAndAvailableApart() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { _ throws in
            let script = """
                import os, sys
                disk, mount = os.statvfs(sys.argv[1]), os.statvfs(sys.argv[2])
                scale = 262144 / 262192
                print(disk.f_bfree * disk.f_frsize / 4096 * scale, disk.f_bavail * disk.f_frsize / 4096 * scale, mount.f_bfree, mount.f_bavail)
                """
            let figures = try run(["python3", "-c", script, harness.storage, vault])
            let numbers = figures.output.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            try #require(numbers.count == 4, "\(figures)")
            // Other programs write to the disk meanwhile: within 0.1 %.
            #expect(abs(numbers[2] - numbers[0]) <= numbers[0] / 1000, "free: \(numbers)")
            #expect(abs(numbers[3] - numbers[1]) <= numbers[1] / 1000, "available: \(numbers)")
        }
    }
}

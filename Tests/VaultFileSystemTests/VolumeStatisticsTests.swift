import Glibc
import Testing
import VaultFileSystem

@Suite struct VolumeStatisticsTests {
    @Test func spaceComesFromTheStorageAndFilesAreCounted() throws {
        let h = try FileSystemHarness()
        let stats = try h.fs.statistics()
        let (total, free, available) = try h.storage.capacity()
        #expect(stats.blockSize == 4096)
        #expect(stats.maximumNameLength == 255)
        // Scaled to payload: 64 blocks of content per storage file of 262,192 bytes.
        #expect(stats.totalBlocks == total / 262_192 * 64 + (total % 262_192) / 4096)
        #expect(stats.freeBlocks == free / 262_192 * 64 + (free % 262_192) / 4096)
        #expect(stats.availableBlocks == available / 262_192 * 64 + (available % 262_192) / 4096)
        #expect(stats.totalFiles - stats.freeFiles == 1)

        let folder = try h.mkdir("d")
        let file = try h.createFile("f", in: folder)
        _ = try h.fs.link(file, into: h.root, named: "again".bytes)
        #expect(try h.fs.statistics().totalFiles - h.fs.statistics().freeFiles == 3)
        try h.fs.unlink(folder, "f".bytes)
        try h.fs.unlink(h.root, "again".bytes)
        // Still known to the kernel: counted until forgotten.
        #expect(try h.fs.statistics().totalFiles - h.fs.statistics().freeFiles == 3)
        h.fs.forget(file, count: 2)
        #expect(try h.fs.statistics().totalFiles - h.fs.statistics().freeFiles == 2)
    }

    @Test func aFileUnlinkedWhileKnownIsCountedBeforeTheFirstStatfs() throws {
        // The count is the vault's: a first statfs while an unlinked file is still known counts
        // it, and forgetting it afterwards does not count it off twice.
        let h = try FileSystemHarness()
        let file = try h.createFile("f")
        try h.fs.unlink(h.root, "f".bytes)
        #expect(try h.fs.statistics().totalFiles - h.fs.statistics().freeFiles == 2)
        h.fs.forget(file, count: 1)
        #expect(try h.fs.statistics().totalFiles - h.fs.statistics().freeFiles == 1)
    }
}

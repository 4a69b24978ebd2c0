import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

@Suite struct DiskStorageFolderTests {
    static func folder() throws -> String { try TestFolder.make("store") }

    @Test func initMakesSameSizeFullyAllocatedWellNamedFiles() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let count = try Storage.initialize(at: base + "/s", random: SystemRandom())
        #expect((64...128).contains(count) && count % 16 == 0)
        let folder = try Storage.open(at: base + "/s")
        let names = try folder.listAllNames()
        #expect(names.count == count)
        for name in names {
            #expect(FileName.isWellFormed(name))
            let allocated = try #require(try folder.allocatedBytes(name))
            #expect(allocated >= Format.fileSize, "sparse file \(name)")
            #expect(try folder.read(name)?.count == Format.fileSize)
        }
        let mode = try FileManager.default.attributesOfItem(atPath: base + "/s")[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test func initRefusesAFolderWithAnythingInIt() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/s/.hidden", withIntermediateDirectories: true)
        #expect(throws: StoreError.folderNotEmpty(base + "/s")) { try Storage.initialize(at: base + "/s", random: SystemRandom()) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/s") == [".hidden"])
    }

    @Test func aFolderWithTooFewFilesIsNotAStorage() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let error = #expect(throws: StoreError.self) { try Storage.open(at: base) }
        #expect("\(error!)".contains("holds 0 storage files, a storage has at least 64"))
        let missing = #expect(throws: StoreError.self) { try Storage.open(at: base + "/nothing") }
        #expect("\(missing!)".contains("cannot be opened as a folder"))
    }

    @Test func hostileEntriesAreIgnoredNeverFollowedNorRemoved() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try Storage.initialize(at: base + "/s", random: SystemRandom())
        let folder = try Storage.open(at: base + "/s")
        let files = try folder.listFiles()
        let name = FileName.encode([UInt8](repeating: 7, count: 16))
        let outside = base + "/outside"
        try Data([UInt8](repeating: 1, count: Format.fileSize)).write(to: URL(fileURLWithPath: outside))
        // A symbolic link of the right name form to a file of the right size: never followed.
        try FileManager.default.createSymbolicLink(atPath: base + "/s/" + name, withDestinationPath: outside)
        #expect(try folder.listFiles() == files)
        #expect(throws: StoreError.unusableFile(name)) { try folder.read(name) }
        #expect(throws: StoreError.unusableFile(name)) { try folder.write(name, offset: 0, bytes: [0]) }
        #expect(throws: StoreError.unusableFile(name)) { try folder.remove(name) }
        #expect(FileManager.default.fileExists(atPath: base + "/s/" + name))
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == Data([UInt8](repeating: 1, count: Format.fileSize)))
        // A FIFO must not hang a read.
        let fifo = FileName.encode([UInt8](repeating: 9, count: 16))
        #expect(mkfifo(base + "/s/" + fifo, 0o600) == 0)
        #expect(throws: StoreError.unusableFile(fifo)) { try folder.read(fifo) }
        // A file of another size is not a storage file.
        let small = FileName.encode([UInt8](repeating: 11, count: 16))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: base + "/s/" + small))
        #expect(throws: StoreError.unusableFile(small)) { try folder.read(small) }
        #expect(try folder.listFiles() == files)
    }

    @Test func createAppearsCompleteAndRefusesAnExistingName() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let folder = try DiskStorageFolder(path: base)
        let name = FileName.encode([UInt8](repeating: 3, count: 16))
        let bytes = try SystemRandom().bytes(Format.fileSize)
        try folder.create(name, contents: bytes, durable: true)
        try folder.syncFolder()
        #expect(try folder.listAllNames() == [name])
        #expect(try folder.read(name) == bytes)
        #expect(throws: StoreError.exists(name)) { try folder.create(name, contents: bytes, durable: false) }
        try folder.write(name, offset: 10, bytes: [1, 2, 3])
        #expect(try folder.read(name, offset: 10, count: 3) == [1, 2, 3])
        try folder.remove(name)
        #expect(try folder.listAllNames().isEmpty)
    }

    /// docs/FORMAT.md §3.3: a group's files appear together, each complete and fully allocated;
    /// a group that cannot be made whole (a name is taken) leaves none of its files.
    @Test func aGroupAppearsWholeOrNotAtAll() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let folder = try DiskStorageFolder(path: base)
        let files = try (0..<16).map { index in
            (name: FileName.encode([UInt8](repeating: UInt8(index), count: 16)), contents: try SystemRandom().bytes(Format.fileSize))
        }
        try folder.createGroup(files)
        #expect(Set(try folder.listFiles()) == Set(files.map(\.name)))
        for file in files {
            #expect(try folder.read(file.name) == file.contents)
            let allocated = try #require(try folder.allocatedBytes(file.name))
            #expect(allocated >= Format.fileSize, "sparse file \(file.name)")
        }
        for file in files { try folder.remove(file.name) }

        // The 11th name is taken: the first ten, linked already, go again.
        let taken = files[10].name
        try folder.create(taken, contents: files[10].contents, durable: false)
        #expect(throws: StoreError.exists(taken)) { try folder.createGroup(files) }
        #expect(try folder.listAllNames() == [taken])
    }

    /// A streamed read (a sequential reader's chunk) leaves no copy of the file in the kernel's
    /// page cache, where an ordinary read leaves one; both give the file's bytes.
    @Test func aStreamedReadLeavesNothingInThePageCache() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        // On tmpfs the page cache is the file itself: the bytes are all that can be checked.
        let tmpfs = try shell("stat -f -c %T '\(base)'").hasPrefix("tmpfs")
        let folder = try DiskStorageFolder(path: base)
        let name = FileName.encode([UInt8](repeating: 7, count: Format.nameBytes))
        let contents = try SystemRandom().bytes(Format.fileSize)
        try folder.create(name, contents: contents, durable: true)

        let path = base + "/" + name, size = Format.fileSize
        #expect(try residentPages(path, bytes: size, dropFirst: true) == 0 || tmpfs)
        #expect(try folder.readStreaming(name).map(Array.init) == contents)
        #expect(try residentPages(path, bytes: size) == 0 || tmpfs, "a streamed read went through the page cache")
        #expect(try folder.read(name) == contents)
        #expect(try residentPages(path, bytes: size) == (size + 4095) / 4096, "an ordinary read is cached")
    }

    /// Files written unnamed (a group being assembled) are nowhere in the folder until their
    /// group is named with them, and one dropped leaves nothing, not even a descriptor. Their
    /// whole pages went past the page cache (what lingers is the last, partial one).
    @Test func unnamedFilesAppearOnlyWithTheirGroup() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let tmpfs = try shell("stat -f -c %T '\(base)'").hasPrefix("tmpfs")
        let folder = try DiskStorageFolder(path: base, unnamedAhead: 0)
        let files = try (0..<16).map { index in
            (name: FileName.encode([UInt8](repeating: UInt8(index + 40), count: Format.nameBytes)), contents: try SystemRandom().bytes(Format.fileSize))
        }
        func writeUnnamed() throws -> [(name: String, file: UnnamedFile)] {
            try files[0..<10].map { (name: $0.name, file: try #require(try folder.writeUnnamed($0.contents))) }
        }
        var written = try writeUnnamed()
        _ = try folder.writeUnnamed(try SystemRandom().bytes(Format.fileSize))  // dropped
        #expect(try folder.listAllNames().isEmpty, "an unnamed file shows in the folder")
        #expect(try unnamedFilesOpen(in: base) == 10)

        // A name taken: nothing is left named (a file once named cannot be named again: the
        // vault gives such a group up and writes its chunks anew).
        try folder.create(files[12].name, contents: files[12].contents, durable: false)
        #expect(throws: StoreError.exists(files[12].name)) { try folder.createGroup(Array(files[10...]), written: written) }
        #expect(try folder.listAllNames() == [files[12].name])
        try folder.remove(files[12].name)

        written = try writeUnnamed()
        try folder.createGroup(Array(files[10...]), written: written)
        written = []
        #expect(Set(try folder.listFiles()) == Set(files.map(\.name)))
        try folder.syncFolder()
        for file in files {
            #expect(try residentPages(base + "/" + file.name, bytes: Format.fileSize) <= 1 || tmpfs, "written through the page cache")
            #expect(try folder.read(file.name) == file.contents)
            #expect(try #require(try folder.allocatedBytes(file.name)) >= Format.fileSize, "sparse file \(file.name)")
        }
        #expect(try unnamedFilesOpen(in: base) == 0, "a descriptor left open")
    }

    /// The unnamed files a folder opens ahead (a thread of their own fills back up to the depth
    /// after each is asked for) are in no listing and hold no block; the ones asked for carry their
    /// bytes into their group; a quiet daemon's release closes the rest, and so does the folder's
    /// end, at once, even while a filling runs.
    @Test func unnamedFilesOpenedAheadShowNowhereAndGoAway() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try #require(try shell("python3 -c \"import os; os.close(os.open('\(base)', os.O_TMPFILE | os.O_DIRECT | os.O_RDWR, 0o600))\" && echo ok").hasPrefix("ok"),
                     "this test needs a folder with unnamed direct files (TMPDIR on ext4)")
        let depth = DiskStorageFolder.unnamedFilesAhead
        func eventually(_ wanted: Int) throws -> Int {
            var open = try unnamedFilesOpen(in: base)
            for _ in 0..<500 where open != wanted {
                usleep(10_000)
                open = try unnamedFilesOpen(in: base)
            }
            return open
        }
        let files = try (0..<16).map { index in
            (name: FileName.encode([UInt8](repeating: UInt8(index + 120), count: Format.nameBytes)), contents: try SystemRandom().bytes(Format.fileSize))
        }
        var folder: DiskStorageFolder? = try DiskStorageFolder(path: base)
        var written = [try (name: files[0].name, file: #require(try folder!.writeUnnamed(files[0].contents)))]
        #expect(try eventually(1 + depth) == 1 + depth, "the folder did not fill up to its depth")
        #expect(try folder!.listAllNames().isEmpty, "a file opened ahead shows in the folder")
        #expect(try Self.unnamedFilesWithoutBlocks(in: base) == depth, "files kept ready hold blocks")

        written += try files[1...].map { (name: $0.name, file: try #require(try folder!.writeUnnamed($0.contents))) }
        try folder!.createGroup([], written: written)
        written = []
        #expect(Set(try folder!.listFiles()) == Set(files.map(\.name)))
        for file in files { #expect(try folder!.read(file.name) == file.contents) }
        #expect(try eventually(depth) == depth, "the files taken were not opened again")

        folder!.releaseSpareFiles()
        #expect(try unnamedFilesOpen(in: base) == 0, "a quiet folder kept files open")
        _ = try folder!.writeUnnamed(files[0].contents)  // dropped, and starts a filling
        folder = nil
        #expect(try unnamedFilesOpen(in: base) == 0, "a file opened ahead outlived its folder")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: base)) == Set(files.map(\.name)))
    }

    /// The unnamed files this process has open in `folder` that hold no block.
    static func unnamedFilesWithoutBlocks(in folder: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            var info = stat()
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd))?.hasPrefix(folder + "/#") == true,
                  stat("/proc/self/fd/" + fd, &info) == 0 else { return false }
            return info.st_blocks == 0
        }.count
    }

    /// ramfs refuses O_DIRECT (EINVAL at open) but has O_TMPFILE: a stream's read, an unnamed
    /// file and a group go through the page cache there, with the same bytes and the same group.
    @Test func aFileSystemWithoutDirectIOIsUsedThroughTheCache() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try shell("mount -t ramfs ramfs '\(base)'")
        defer { _ = try? shell("umount '\(base)'") }
        #expect(try shell("python3 -c \"import os; os.open('\(base)', os.O_RDONLY | os.O_DIRECT)\" 2>&1 || true").contains("Invalid argument"),
                "ramfs takes O_DIRECT now: this test needs another file system without it")
        let folder = try DiskStorageFolder(path: base)
        let files = try (0..<16).map { index in
            (name: FileName.encode([UInt8](repeating: UInt8(index + 80), count: Format.nameBytes)), contents: try SystemRandom().bytes(Format.fileSize))
        }
        let written = try files[0..<4].map { (name: $0.name, file: try #require(try folder.writeUnnamed($0.contents))) }
        #expect(try folder.listAllNames().isEmpty)
        try folder.createGroup(Array(files[4...]), written: written)
        #expect(Set(try folder.listFiles()) == Set(files.map(\.name)))
        for file in files {
            #expect(try folder.readStreaming(file.name).map(Array.init) == file.contents)
        }
    }

    @Test func fileNamesHaveOneFormAndAlphabet() {
        #expect(FileName.encode([UInt8](repeating: 0, count: 16)) == "aaaaaaaaaaaaaaaaaaaaaaaaaa")
        #expect(FileName.encode([UInt8](repeating: 0xff, count: 16)) == "77777777777777777777777774") // python3: base64.b32encode(b"\xff" * 16)
        #expect(!FileName.isWellFormed("aaaaaaaaaaaaaaaaaaaaaaaaab"))
        #expect(!FileName.isWellFormed("AAAAAAAAAAAAAAAAAAAAAAAAAA"))
        #expect(!FileName.isWellFormed("aaaaaaaaaaaaaaaaaaaaaaaaa"))
        #expect(FileName.isWellFormed("aaaaaaaaaaaaaaaaaaaaaaaaae"))
    }
}

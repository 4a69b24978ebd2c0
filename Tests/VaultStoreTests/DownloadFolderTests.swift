import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// A sync's download folder (FORMAT.md §13.11): a writing open removes one that a killed sync
/// left, never one a sync in progress holds; files come out of it at their names whole, with
/// the storage files' mode, and the storage never counts what it holds.
@Suite struct DownloadFolderTests {
    static func entries(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { !FileName.isWellFormed($0) }
    }

    @Test func aHeldFolderStaysAndAKilledSyncsFolderGoesAtTheNextOpen() throws {
        let path = try StorageRecreatorTests.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = try DiskStorageFolder(path: path).listFiles()
        var downloads: DownloadFolder? = try DownloadFolder(storagePath: path, random: SystemRandom())
        let name = try #require(downloads?.path.split(separator: "/").last.map(String.init))
        #expect(name.hasSuffix(DownloadFolder.suffix) && FileName.isWellFormed(String(name.dropLast(DownloadFolder.suffix.count))))
        // A torn file in it: the storage does not count it, and an open of another vault
        // leaves the folder of a sync in progress alone.
        #expect(FileManager.default.createFile(atPath: path + "/" + name + "/" + before[0], contents: Data(count: 1000)))
        try DiskStorageFolder(path: path).removeRecreationLeftovers()
        #expect(try Self.entries(path) == [name], "a held folder stays")
        #expect(try DiskStorageFolder(path: path).listFiles().sorted() == before.sorted())
        // The sync is killed (its descriptor and lock go): the next open removes the folder.
        downloads = nil
        try DiskStorageFolder(path: path).removeRecreationLeftovers()
        #expect(try Self.entries(path).isEmpty, "the killed sync's folder went with its file")
        #expect(try DiskStorageFolder(path: path).listFiles().sorted() == before.sorted())
    }

    @Test func filesGoInWholeWithTheStorageMode() throws {
        let path = try StorageRecreatorTests.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DiskStorageFolder(path: path)
        let before = try folder.listFiles().sorted()
        let downloads = try DownloadFolder(storagePath: path, random: SystemRandom())
        let new = (0..<3).map { _ in FileName.encode((0..<Format.nameBytes).map { _ in UInt8.random(in: 0...255) }) }
        let bytes = (0..<4).map { n in [UInt8](repeating: UInt8(n + 1), count: Format.fileSize) }
        for (name, file) in zip([before[0]] + new, bytes) {
            #expect(FileManager.default.createFile(atPath: downloads.path + "/" + name, contents: Data(file),
                                                   attributes: [.posixPermissions: 0o644]))
            #expect(downloads.holdsWhole(name))
        }
        let fill = (0..<13).map { _ in (name: FileName.encode((0..<Format.nameBytes).map { _ in UInt8.random(in: 0...255) }),
                                        contents: [UInt8](repeating: 9, count: Format.fileSize)) }
        try folder.placeDownloads(from: downloads, replacing: [before[0]], groups: [DownloadedGroup(downloaded: new, fill: fill)])
        try downloads.remove()
        #expect(try Self.entries(path).isEmpty, "the folder went")
        let after = try folder.listFiles()
        #expect(after.count == before.count + 16 && after.count % 16 == 0, "the group came in whole")
        for (name, file) in zip([before[0]] + new, bytes) {
            #expect(try folder.read(name) == file)
            let mode = try FileManager.default.attributesOfItem(atPath: path + "/" + name)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(name): \(String(mode ?? 0, radix: 8))")
        }
        #expect(!downloads.holdsWhole(new[0]))
    }
}

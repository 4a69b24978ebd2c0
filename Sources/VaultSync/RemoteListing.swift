import Foundation
import VaultFormat

/// What `rclone lsjson` shows of a remote storage: files of the storage's name form with their
/// sizes; everything else (other names, folders) is only counted, and never touched.
public struct RemoteListing: Sendable, Equatable {
    public var files: [String: Int]
    public var otherEntries: Int

    public init(files: [String: Int], otherEntries: Int) {
        self.files = files
        self.otherEntries = otherEntries
    }

    /// Names of files of the storage's size.
    public var storageFiles: [String] { files.filter { $0.value == Format.fileSize }.map(\.key).sorted() }

    /// Whether one of `names` is there but not whole: a sync killed while rclone wrote it to a
    /// server that writes in place (`rclone serve webdav` does) left it so.
    public func holdsTorn(_ names: [String]) -> Bool {
        names.contains { name in files[name].map { $0 != Format.fileSize } ?? false }
    }

    private struct Entry: Decodable {
        var Name: String
        var Size: Int
        var IsDir: Bool?
    }

    init(lsjson: [UInt8]) throws {
        let entries = try JSONDecoder().decode([Entry].self, from: Data(lsjson))
        var files: [String: Int] = [:], others = 0
        for entry in entries {
            if entry.IsDir != true && FileName.isWellFormed(entry.Name) { files[entry.Name] = entry.Size } else { others += 1 }
        }
        self.init(files: files, otherEntries: others)
    }
}

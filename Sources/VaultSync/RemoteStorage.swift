import Foundation
import SystemCalls
import VaultFormat

/// A remote path seen as a storage folder of its own (R-SYN-2): files of the storage's one size
/// and name form, moved whole. Only names of that form are ever listed, read, written or
/// removed, always by explicit list: nothing here copies, syncs or purges a whole folder, so a
/// remote path shared by several vaults, or holding other files, keeps what is not ours.
///
/// Not a `StorageFolder`: a remote has no writes inside a file, no fsync and no O_TMPFILE, and
/// its cost is per process and per request, so the operations that move many files are batches
/// (one rclone process each, `transfers` files at a time) between the remote and a local folder.
/// Only storage files pass through rclone: sealed bytes, never plaintext.
public struct RemoteStorage: Sendable {
    public let location: RemoteLocation
    public let rclone: Rclone

    public init(_ location: RemoteLocation, rclone: Rclone) {
        self.location = location
        self.rclone = rclone
    }

    /// The files of the storage's name form, with their sizes (a size other than the storage
    /// size is a damaged or half-written file), and how many other entries were ignored. A
    /// remote path that does not exist yet lists as empty.
    public func list() throws(RemoteError) -> RemoteListing {
        let result = try rclone.watched(["lsjson", "--files-only", "--no-modtime", "--no-mimetype", location.path], on: location)
        // Exit 3: "directory not found", a remote storage not made yet (an S3 bucket included).
        if result.status == 3 { return RemoteListing(files: [:], otherEntries: 0) }
        guard result.status == 0 else {
            throw RemoteError.classify(status: result.status, errorOutput: result.errorOutput, remote: location, writing: false)
        }
        do { return try RemoteListing(lsjson: result.output) } catch {
            throw .failed(remote: location.description, status: 0, detail: "rclone lsjson printed something that is not a listing")
        }
    }

    /// One whole file, into memory; nil when the remote has nothing at that name. At most one
    /// byte more than the storage size is read, so a planted huge file costs nothing.
    public func read(_ name: String) throws(RemoteError) -> [UInt8]? {
        precondition(FileName.isWellFormed(name), "only storage names are read")
        let arguments = ["cat", "--count", String(Format.fileSize + 1), location.file(name)]
        var result = try rclone.watched(arguments, on: location)
        // A file read while another device replaces it ends early on a server that writes in
        // place (rclone's own WebDAV server does): once more, after that write.
        if result.status != 0 && String(decoding: result.errorOutput, as: UTF8.self).contains("unexpected EOF") {
            result = try rclone.watched(arguments, on: location)
        }
        // Exit 3 or 4: not found; S3 answers a missing object with nothing and exit 0.
        if result.status == 3 || result.status == 4 || (result.status == 0 && result.output.isEmpty) { return nil }
        guard result.status == 0 else {
            throw RemoteError.classify(status: result.status, errorOutput: result.errorOutput, remote: location, writing: false)
        }
        return result.output
    }

    /// Writes one file from memory (`rcat`), replacing any file of that name. Kept in memory by
    /// rclone (below its streaming cutoff), so no spool file is written on this machine.
    public func write(_ name: String, contents: [UInt8]) throws(RemoteError) {
        precondition(FileName.isWellFormed(name) && contents.count == Format.fileSize, "storage files have one size and name form")
        try rclone.check(["rcat", "--streaming-upload-cutoff", "1Mi", location.file(name)],
                         on: location, input: contents, writing: true)
    }

    /// Copies these files of a local folder to the remote, replacing files of the same names,
    /// in one rclone process. Every file must be a regular file of the storage size (rclone
    /// would skip a missing one without a word). `filesDone` hears how many have gone up so far.
    public func upload(_ names: [String], from folder: String, filesDone: ((Int) -> Void)? = nil) throws(RemoteError) {
        guard !names.isEmpty else { return }
        for name in names {
            precondition(FileName.isWellFormed(name), "only storage names are uploaded")
            let path = folder + "/" + name
            guard let status = try? SystemCall.status(path), status.isRegular, status.size == Format.fileSize else {
                throw .unusableLocalFile(path)
            }
        }
        try rclone.check(["copy", "--files-from-raw", "-", "--no-check-dest", "--no-traverse",
                          "--transfers", String(rclone.settings.transfers), folder, location.path],
                         on: location, input: Self.list(names), writing: true, filesDone: filesDone)
    }

    /// Copies these remote files into a local folder in one rclone process, writing straight at
    /// their names (a file already there is truncated and rewritten: the caller chooses names
    /// that nothing relies on). Their times are not copied. Throws `missingFiles` when any did
    /// not arrive whole (rclone skips a missing source file without a word). `filesDone` hears
    /// how many have come down so far.
    public func download(_ names: [String], into folder: String, filesDone: ((Int) -> Void)? = nil) throws(RemoteError) {
        guard !names.isEmpty else { return }
        precondition(names.allSatisfy(FileName.isWellFormed), "only storage names are downloaded")
        try rclone.check(["copy", "--files-from-raw", "-", "--no-check-dest", "--no-traverse", "--local-no-set-modtime",
                          "--transfers", String(rclone.settings.transfers), location.path, folder],
                         on: location, input: Self.list(names), writing: false, filesDone: filesDone)
        let missing = names.filter { name in
            guard let status = try? SystemCall.status(folder + "/" + name) else { return true }
            return !status.isRegular || status.size != Format.fileSize
        }
        guard missing.isEmpty else { throw .missingFiles(remote: location.description, names: missing) }
    }

    /// Removes exactly these files from the remote; names with nothing there are not an error.
    /// rclone is also told never to remove more files than were named (`--max-delete`).
    public func delete(_ names: [String]) throws(RemoteError) {
        guard !names.isEmpty else { return }
        precondition(names.allSatisfy(FileName.isWellFormed), "only storage names are removed")
        try rclone.check(["delete", "--files-from-raw", "-", "--max-delete", String(names.count), location.path],
                         on: location, input: Self.list(names), writing: true)
    }

    private static func list(_ names: [String]) -> [UInt8] { Array(names.map { $0 + "\n" }.joined().utf8) }
}

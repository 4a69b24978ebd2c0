import Foundation
import VaultCore

/// rclone has no compare-and-swap (docs/FORMAT.md §13.11): a sync checks the remote's root slots
/// just before it writes its root, but another device that checked them just before it did
/// writes its own root over them moments later. Read back once as long has passed as the check
/// and the writes took, the slots show such a root: the sync then must not take its own as up.
extension RemoteStorage {
    /// The longest a sync waits before it reads its root back.
    static let longestSettle: Duration = .seconds(10)

    /// Whether the remote still holds `files` (a root's slot and its copy) as written, read back
    /// after `settle` (the time from the slots' check to the end of the writes, at most
    /// `longestSettle`): a device whose check came before these writes has had as long to
    /// write its own.
    public func stillHolds(_ files: [(name: String, file: [UInt8])], settle: Duration) throws(RemoteError) -> Bool {
        let wait = min(settle, Self.longestSettle).components
        Thread.sleep(forTimeInterval: Double(wait.seconds) + Double(wait.attoseconds) / 1e18)
        let found = try read(files.map(\.name))
        return zip(files, found).allSatisfy { $0.file == $1 }
    }

    /// Writes a root slot or the remote's record, files another device may write at the same
    /// instant. rclone checks a file's hash once written; on a remote that writes in place
    /// (its local backend and WebDAV server) the other device's write of the same file makes
    /// that check fail, "corrupted on transfer". Read back, the file holds these bytes (this
    /// write landed last: done) or others: the race above, which the sync reports as such.
    public func writeContended(_ name: String, contents: [UInt8]) throws {
        do { try write(name, contents: contents) } catch where error.changedInTransfer {
            guard try read(name) == contents else { throw SyncRefusal.raced }
        }
    }
}

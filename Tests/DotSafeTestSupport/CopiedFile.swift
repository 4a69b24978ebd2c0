import Foundation
import Glibc
import Testing

/// What a copy tool that compares size and modification time sees of one file (`rsync -a`
/// compares whole seconds): the tests of docs/FORMAT.md §11.2, issue 12 item 4. Every storage
/// file has one size, so a file whose bytes changed must get a later whole second.
public struct CopiedFile: Equatable, Sendable {
    public var bytes: Data
    /// Nanoseconds since the epoch.
    public var modification: Int64
    public var inode: UInt64

    /// Every regular file of `folder`, as a copy taken now sees it.
    public static func snapshot(_ folder: String) throws -> [String: CopiedFile] {
        var files: [String: CopiedFile] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            var info = stat()
            guard lstat(folder + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  let bytes = FileManager.default.contents(atPath: folder + "/" + name) else { continue }
            files[name] = CopiedFile(bytes: bytes, modification: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                                     inode: UInt64(info.st_ino))
        }
        return files
    }

    /// Expects every file whose bytes differ from what `copy` saw to be in a later whole second
    /// than the copy's (so `rsync -a` copies it again), and no file's time to have gone back.
    /// Returns how many changed.
    public static func expectChangesSeen(since copy: [String: CopiedFile], now: [String: CopiedFile], _ what: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        var changed = 0, wentBack: [String] = [], missed: [String] = []
        for (name, old) in copy.sorted(by: { $0.key < $1.key }) {
            guard let new = now[name] else { continue }
            if new.modification < old.modification { wentBack.append("\(name) \(old.modification) → \(new.modification)") }
            guard new.bytes != old.bytes else { continue }
            changed += 1
            if new.modification / 1_000_000_000 <= old.modification / 1_000_000_000 {
                missed.append("\(name) \(old.modification) → \(new.modification)")
            }
        }
        #expect(missed.isEmpty, "\(what): \(missed.count) of \(changed) changed files are not in a later second: \(missed)",
                sourceLocation: sourceLocation)
        #expect(wentBack.isEmpty, "\(what): \(wentBack.count) files' times went back: \(wentBack.prefix(5))", sourceLocation: sourceLocation)
        return changed
    }
}

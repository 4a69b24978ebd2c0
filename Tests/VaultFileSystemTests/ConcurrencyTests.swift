import Dispatch
import Glibc
import Synchronization
import Testing
import VaultCore
import VaultFileSystem

/// libfuse calls from several threads at once: the model's bookkeeping (lookups, handles,
/// item count) must stay consistent.
@Suite struct ConcurrencyTests {
    @Test func manyThreadsOnOneFileSystem() throws {
        let h = try FileSystemHarness()
        let folders = try (0..<8).map { try h.mkdir("t\($0)") }
        let shared = try h.createFile("shared")
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let folder = folders[worker]
            do {
                let append = try h.fs.open(shared, flags: O_WRONLY | O_APPEND, caller: .root)
                for i in 0..<60 {
                    let name = "f\(i)".bytes
                    let (attributes, handle) = try h.fs.create(folder, name, mode: 0o644, flags: O_CREAT | O_RDWR, caller: h.caller)
                    _ = try h.fs.write(handle, offset: 0, bytes: pattern(100 + i, seed: UInt64(worker * 1000 + i)))
                    _ = try h.fs.write(append, offset: 0, bytes: [UInt8(worker)])
                    _ = try h.fs.lookup(folder, name)
                    if i % 3 == 0 { try h.fs.rename(folder, name, to: folder, "r\(i)".bytes) }
                    if i % 5 == 0 { try h.fs.unlink(folder, i % 3 == 0 ? "r\(i)".bytes : name) }
                    h.fs.release(handle)
                    h.fs.forget(attributes.inode, count: 2)
                    let listing = try h.fs.openDirectory(folder)
                    _ = try h.fs.readDirectory(listing, offset: 0, limit: 1000)
                    h.fs.releaseDirectory(listing)
                    _ = try h.fs.statistics()
                }
                h.fs.release(append)
            } catch {
                failures.add()
            }
        }
        #expect(failures.value == 0)
        #expect(h.fs.openHandleCount == 0)
        #expect(try h.fs.attributes(shared).size == 8 * 60)
        // 8 folders × (60 − 12 removed) files + 8 folders + "shared" + the root.
        let stats = try h.fs.statistics()
        #expect(stats.totalFiles - stats.freeFiles == UInt64(8 * 48 + 8 + 1 + 1))
        for (worker, folder) in folders.enumerated() {
            let names = try h.names(folder).dropFirst(2)
            #expect(names.count == 48)
            let id = try h.lookup("f1", in: folder).inode
            #expect(try h.readAll(id) == pattern(101, seed: UInt64(worker * 1000 + 1)))
        }
        try h.fs.close()
        let again = try h.reopened()
        #expect(try again.names(try again.lookup("t7").inode).count == 50)
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

import CFuse
import Dispatch
import Glibc
import Synchronization
import VaultFileSystem

/// Pushes the rest of a chunk that a read at random touched into the kernel's page cache
/// (`fuse_lowlevel_notify_store`): a 4 KiB read at random costs the daemon the load and
/// decryption of its whole 256 KiB chunk anyway (or finds it in the vault's cache), and the
/// kernel's next reads in that chunk are then page-cache hits instead of round trips. And a
/// small file opened for reading whole before the open is answered (`openForReading`), so
/// that its read asks nothing.
///
/// A pushed page must never be older than the file. The kernel copies a write into its pages
/// before it sends the WRITE, and drops the pages past a truncate only once the truncate is
/// answered; so pages are pushed only while no handle with write access is open
/// (`FileSystem.pageFill`), from one queue, and whatever changes the file next waits for the
/// pushes queued for it before the kernel learns of it (`afterFills`): the reply to an open
/// that may write, the reply to a truncate, the invalidation after a sync. A push may wait for
/// a page that the kernel holds locked for a read; it runs on its own thread, which no request
/// waits for, so the read is answered and the push goes on.
///
/// The same queue has the kernel write back a file's dirty pages before a time is set on it
/// (`afterWriteBack`): that, too, waits for requests, so it must not run on a request's thread.
final class KernelCacheFill: Sendable {
    private let queue = DispatchQueue(label: "dotsafe.kernel-cache-fill")
    private let bookkeeping = Mutex(Bookkeeping())
    /// The session while pushes may be made: held during each (the session outlives it).
    private let session = Mutex<SessionPointer?>(nil)

    private struct Bookkeeping {
        var open = true
        /// Chunks queued or being pushed, by inode.
        var queued: [UInt64: Set<Int>] = [:]
        var total = 0
        /// Pushes running on an open's thread (`openForReading`): what is queued for their file waits.
        var pushingAtOpen: [UInt64: DispatchGroup] = [:]
        /// Tests: runs before each push, after its pages were taken from the vault.
        var beforePush: (@Sendable (UInt64) -> Void)?
    }

    /// Reads at random faster than the queue pushes drop their fills beyond this: a fill is a
    /// saving, never owed.
    static let maximumQueued = 64

    func attach(_ session: SessionPointer) { self.session.withLock { $0 = session } }

    /// Queues the push of chunk `index` of `inode`, which a read at random just touched (once
    /// while it waits: the reads of its other pages that come meanwhile add nothing).
    func fill(_ inode: UInt64, chunk index: Int, from fileSystem: FileSystem) {
        bookkeeping.withLock { state in
            guard state.open, state.total < Self.maximumQueued,
                  state.queued[inode, default: []].insert(index).inserted else { return }
            // Counted before `pageFill` looks at the file's writers: an open that may write
            // counts itself a writer before it asks `afterFills`, so one of the two sees the other.
            state.total += 1
            queue.async { [self] in
                push(fileSystem.pageFill(inode, chunk: index))
                bookkeeping.withLock { state in
                    state.total -= 1
                    state.queued[inode]!.remove(index)
                    if state.queued[inode]!.isEmpty { state.queued[inode] = nil }
                }
            }
        }
    }

    /// Answers an open for reading of `inode` as `handle` through `reply`, which says whether
    /// the whole file was pushed into the kernel's page cache first (`FileSystem.openFill`): the
    /// open may then keep the kernel's cache (an open without keep_cache drops the file's pages
    /// once answered, pushed ones too). A file the kernel may hold (`keepsCache`) is not pushed.
    /// The push runs on the open's own thread, which must then wait on nothing but the kernel:
    /// the handle is the file's only one, so no read of it is under way, and any open, truncate
    /// or invalidation of the file that comes meanwhile is answered after the push.
    func openForReading(_ inode: UInt64, handle: UInt64, keepsCache: Bool, from fileSystem: FileSystem,
                        then reply: @escaping @Sendable (_ pushed: Bool) -> Void) {
        let done = DispatchGroup()
        let step = bookkeeping.withLock { state -> OpenStep in
            // Another open's push is running: this one must not start a read before it ends.
            if state.pushingAtOpen[inode] != nil, deferred(inode, &state, { reply(false) }) { return .deferred }
            guard !keepsCache, state.open, state.queued[inode] == nil, state.total < Self.maximumQueued else { return .answer }
            state.total += 1
            state.queued[inode] = [0]
            state.pushingAtOpen[inode] = done
            done.enter()
            return .push
        }
        switch step {
        case .deferred: return
        case .answer: return reply(false)
        case .push: break
        }
        let pushed = push(fileSystem.openFill(inode, handle: handle))
        bookkeeping.withLock { state in
            state.total -= 1
            state.queued[inode]!.remove(0)
            if state.queued[inode]!.isEmpty { state.queued[inode] = nil }
            state.pushingAtOpen[inode] = nil
        }
        done.leave()
        reply(pushed)
    }

    private enum OpenStep { case deferred, answer, push }

    /// Runs `body` once the kernel has sent the pages of `inode` that stores into a shared
    /// mapping left dirty (as WRITEs) and dropped its pages of it: on the queue, after the
    /// pushes queued for it. The kernel writes a dirty page back before it drops it, and waits
    /// for those WRITEs, which the loop's threads answer: so this never runs on a request's
    /// thread (with one loop thread, nothing would answer them).
    func afterWriteBack(of inode: UInt64, _ body: @escaping @Sendable () -> Void) {
        let writeBack: @Sendable () -> Void = { [self] in
            // Not held while the kernel waits for the WRITEs: an open's push would wait for it
            // on a request's thread. `close()` waits for this queue before the session goes.
            if let session = session.withLock({ $0 }) {
                // A failure (the inode forgotten, the mount going) leaves no page to write back.
                _ = fuse_lowlevel_notify_inval_inode(session.raw, fuse_ino_t(inode), 0, 0)
            }
            body()
        }
        if !bookkeeping.withLock({ deferred(inode, &$0, writeBack) }) { queue.async(execute: writeBack) }
    }

    /// Runs `body` once no push queued for `inode` so far can still land: at once when none
    /// is queued, otherwise on the queue after them.
    func afterFills(of inode: UInt64, _ body: @escaping @Sendable () -> Void) {
        if !bookkeeping.withLock({ deferred(inode, &$0, body) }) { body() }
    }

    /// Queues `body` after the pushes queued for `inode`, if any (then true): on the queue,
    /// where a push running on an open's thread is waited for (the queue's thread serves no
    /// request, and that push needs none).
    private func deferred(_ inode: UInt64, _ state: inout Bookkeeping, _ body: @escaping @Sendable () -> Void) -> Bool {
        guard state.queued[inode] != nil else { return false }
        if let pushing = state.pushingAtOpen[inode] {
            queue.async {
                pushing.wait()
                body()
            }
        } else {
            queue.async(execute: body)
        }
        return true
    }

    /// Ends the pushes and runs what waits for them; before the session goes.
    func close() {
        bookkeeping.withLock { $0.open = false }
        session.withLock { $0 = nil }
        queue.sync {}
    }

    /// Tests: waits until every push queued so far is done.
    func settle() { queue.sync {} }

    func setBeforePush(_ body: (@Sendable (UInt64) -> Void)?) { bookkeeping.withLock { $0.beforePush = body } }

    /// Whether the kernel took the pages.
    @discardableResult
    private func push(_ fill: FileSystem.PageFill?) -> Bool {
        guard var fill else { return false }
        defer { fill.wipe() }
        bookkeeping.withLock { $0.beforePush }?(fill.inode)
        return session.withLock { session in
            guard let session else { return false }
            let count = fill.count
            return fill.bytes.withUnsafeMutableBytes { bytes in
                var vector = fuse_bufvec(count: 1, idx: 0, off: 0,
                                         buf: fuse_buf(size: count, flags: fuse_buf_flags(0), mem: bytes.baseAddress, fd: -1, pos: 0))
                // A failure (the inode forgotten, the mount going) only loses the saving.
                return fuse_lowlevel_notify_store(session.raw, fuse_ino_t(fill.inode), off_t(fill.offset), &vector,
                                                  fuse_buf_copy_flags(0)) == 0
            }
        }
    }
}

/// A value handed to the queue from a request's thread: a request's pointer or arguments,
/// which libfuse lets any thread reply to.
struct Handed<Value>: @unchecked Sendable {
    var value: Value
}

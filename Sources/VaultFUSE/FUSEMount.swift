import CFuse
import Glibc
import Synchronization
import SystemCalls
import VaultFileSystem

/// A `FileSystem` mounted with libfuse's low-level API, served by libfuse's multi-threaded loop
/// on a thread of its own. Usable in-process (tests) and by the `dotsafe mount` daemon:
///
///     let mount = try FUSEMount.mount(fileSystem, at: "/home/me/Vault")
///     …
///     try mount.unmount()            // or: try mount.waitUntilUnmounted() after fusermount3 -u
///
/// Both end the same way: the loop stops, the session is destroyed, and the file system is
/// closed (final commit, keys erased); an error of that last commit is thrown.
public final class FUSEMount: Sendable {
    public struct Options: Sendable {
        /// Let other users in (needs `user_allow_other` in /etc/fuse.conf for non-root).
        /// `default_permissions` is always on: the kernel checks modes and owners.
        public var allowOther: Bool
        public var readOnly: Bool
        /// No programs run from the mount (`nodev` and `nosuid` are libfuse's defaults already).
        public var noExec: Bool
        /// Have fusermount3 remove the mount if this process dies (the daemon wants this).
        public var autoUnmount: Bool
        /// Threads of libfuse's loop. Reads decrypt in parallel; everything else serialises in the
        /// vault, so a few suffice.
        public var maxThreads: Int
        /// Seconds the kernel may cache attributes and names.
        public var attributeTimeout: Double
        public var entryTimeout: Double
        /// libfuse's `-d`: every request on stderr.
        public var debug: Bool

        public init(allowOther: Bool = false, readOnly: Bool = false, noExec: Bool = false, autoUnmount: Bool = false,
                    maxThreads: Int = 8, attributeTimeout: Double = 1, entryTimeout: Double = 1, debug: Bool = false) {
            self.allowOther = allowOther; self.readOnly = readOnly; self.noExec = noExec; self.autoUnmount = autoUnmount
            self.maxThreads = maxThreads; self.attributeTimeout = attributeTimeout; self.entryTimeout = entryTimeout
            self.debug = debug
        }

        /// The `-o` list for libfuse. Options such as `max_write` or `writeback_cache` are not
        /// accepted here by libfuse 3.14; they are set in `init` instead.
        var mountOptions: String {
            // `noatime`: reads never change the vault (a read that wrote a time would show in
            // the storage), and the mount table says so instead of the kernel's `relatime`.
            var list = ["fsname=dotsafe", "subtype=dotsafe", "default_permissions", "noatime"]
            if allowOther { list.append("allow_other") }
            if readOnly { list.append("ro") }
            if noExec { list.append("noexec") }
            if autoUnmount { list.append("auto_unmount") }
            return list.joined(separator: ",")
        }
    }

    /// The mount point as given to `mount`.
    public let mountPoint: String
    public let fileSystem: FileSystem
    private let session: SessionPointer
    private let context: Unmanaged<FUSEContext>
    /// What pushes pages into the kernel's cache unasked: the context's, held here too, because
    /// `finish` releases the context while a sync's round may still call `invalidate` (a
    /// round whose merge the close waited for; SyncMountCommitLockTests).
    let cacheFill: KernelCacheFill
    private let loop: LoopState
    private let lifecycle = Mutex(Lifecycle())
    /// Whether the session may still be told to invalidate (false from just before it is
    /// destroyed); held during each notification.
    private let notifiable = Mutex(true)
    private let beforeClose = Mutex<(@Sendable () -> Void)?>(nil)

    private struct Lifecycle {
        var thread: pthread_t?
        var finished = false
        var closeError: FSError?
    }

    private init(mountPoint: String, fileSystem: FileSystem, session: SessionPointer, context: Unmanaged<FUSEContext>) {
        self.mountPoint = mountPoint
        self.fileSystem = fileSystem
        self.session = session
        self.context = context
        cacheFill = context.takeUnretainedValue().cacheFill
        loop = LoopState()
    }

    /// Mounts `fileSystem` at `mountPoint` (an existing folder) and starts serving it. When
    /// this returns the mount is in place; the first request waits for the loop's INIT reply.
    public static func mount(_ fileSystem: FileSystem, at mountPoint: String, options: Options = Options()) throws(FUSEError) -> FUSEMount {
        let context = Unmanaged.passRetained(FUSEContext(fileSystem: fileSystem, attributeTimeout: options.attributeTimeout,
                                                         entryTimeout: options.entryTimeout))
        let arguments = ["dotsafe", "-o", options.mountOptions] + (options.debug ? ["-d"] : [])
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var operations = FUSEOperations.table()
        let created = argv.withUnsafeMutableBufferPointer { argv -> OpaquePointer? in
            var args = fuse_args(argc: Int32(argv.count), argv: argv.baseAddress, allocated: 0)
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(&args, &operations, MemoryLayout<fuse_lowlevel_ops>.size, context.toOpaque())
        }
        guard let created else {
            context.release()
            throw .invalidOptions(options.mountOptions)
        }
        // For an unprivileged user libfuse runs fusermount3, which says on standard error why
        // it refuses: a daemon's is /dev/null, so the reason goes into the error instead. The
        // `auto_unmount` helper (the fusermount3 of a mount that succeeded, which stays on)
        // does not keep this file: libfuse runs that one, with `subtype=`, on /dev/null, and
        // only after a failure again, without `subtype=`, on this (UnmountHelperTests).
        let (mounted, said) = ProcessCalls.capturingStandardError { fuse_session_mount(created, mountPoint) == 0 }
        var lines = (said ?? "").split(separator: "\n").map(String.init)
        let reasonAt = lines.lastIndex { $0.hasPrefix("fuse: ") || $0.hasPrefix("fusermount3: ") } ?? lines.indices.last
        let reason = mounted ? nil : reasonAt.map { lines.remove(at: $0) }
        // The rest goes where it would have gone: a warning on a mount that succeeded, and what
        // other threads said meanwhile (the file held all of the process's standard error).
        for line in lines { _ = Array((line + "\n").utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }
        guard mounted else {
            fuse_session_destroy(created)
            context.release()
            throw .mountFailed(mountPoint, reason: reason)
        }
        _ = FUSEDevice.install(on: created)
        context.takeUnretainedValue().cacheFill.attach(SessionPointer(raw: created))
        let mount = FUSEMount(mountPoint: mountPoint, fileSystem: fileSystem, session: SessionPointer(raw: created), context: context)
        fileSystem.whenAttributesChangeUnseen { [weak mount] item in mount?.invalidateAttributes(of: item) }
        try mount.startLoop(maxThreads: max(1, options.maxThreads))
        return mount
    }

    /// Whether the loop still serves the mount (false once the kernel mount is gone).
    public var isServing: Bool { !loop.ended.load(ordering: .acquiring) }

    /// Removes the kernel mount, waits for the loop to end, and closes the file system. `lazy`
    /// detaches the mount at once even while files are open in it (`umount -l`): the loop then
    /// serves those files until they are closed, and this waits for that. Without `lazy`, a mount
    /// still busy after `busyTimeout` seconds of retries throws `.busy` and stays mounted and
    /// served (a process that just exited may hold it for a moment).
    public func unmount(lazy: Bool = false, busyTimeout: Double = 3) throws(FUSEError) {
        // Not under the lifecycle lock: a thread in `waitUntilUnmounted` holds it while it joins
        // the loop, and only this detach ends the loop.
        if isServing {
            try detach(lazy: lazy, busyTimeout: busyTimeout)
        }
        try finish()
    }

    /// Blocks until the mount goes away (`fusermount3 -u`, `umount`, or `unmount()` from another
    /// thread, e.g. a signal handler's), then cleans up and closes the file system. The daemon's
    /// main thread waits here.
    public func waitUntilUnmounted() throws(FUSEError) {
        try finish()
    }

    /// Runs `body` once the mount is gone and before the file system is closed (a mount's last
    /// sync).
    public func whenUnmounted(_ body: @escaping @Sendable () -> Void) { beforeClose.withLock { $0 = body } }

    // MARK: The kernel's caches

    /// Makes the kernel forget what it cached of items changed behind its back (a sync): the
    /// names (parent, name) first, then each item's attributes and pages. Not to be called from
    /// a request or under the file system's locks: the kernel may first write back an item's
    /// dirty pages, which come back as requests. An item or name it never saw is no error.
    /// An item's pages are dropped after the pushes into them already queued (`KernelCacheFill`).
    /// Once the mount is gone (even closed) it does nothing.
    public func invalidate(items: Set<UInt64>, names: [(parent: UInt64, name: [UInt8])]) {
        notifiable.withLock { open in
            guard open, isServing else { return }
            for (parent, name) in names {
                _ = name.withUnsafeBufferPointer { bytes in
                    bytes.withMemoryRebound(to: CChar.self) {
                        fuse_lowlevel_notify_inval_entry(session.raw, fuse_ino_t(parent), $0.baseAddress, $0.count)
                    }
                }
            }
        }
        for item in items.sorted() {
            cacheFill.afterFills(of: item) { [self] in
                notifiable.withLock { open in
                    guard open, isServing else { return }
                    _ = fuse_lowlevel_notify_inval_inode(session.raw, fuse_ino_t(item), 0, 0)
                }
            }
        }
    }

    /// Makes the kernel forget the attributes it holds of `item` (not its pages or names): safe
    /// from a request, as it waits for no lock a request may hold.
    func invalidateAttributes(of item: UInt64) {
        notifiable.withLock { open in
            guard open, isServing else { return }
            // A negative offset: the attributes only.
            _ = fuse_lowlevel_notify_inval_inode(session.raw, fuse_ino_t(item), -1, 0)
        }
    }

    // MARK: The loop thread

    private func startLoop(maxThreads: Int) throws(FUSEError) {
        let job = Unmanaged.passRetained(LoopJob(session: session, maxThreads: UInt32(maxThreads), state: loop))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            Unmanaged<LoopJob>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, job.toOpaque())
        guard result == 0 else {
            job.release()
            fuse_session_unmount(session.raw)
            fuse_session_destroy(session.raw)
            context.release()
            throw .threadFailed(result)
        }
        lifecycle.withLock { $0.thread = thread }
    }

    /// Joins the loop (once), frees the session, closes the file system (once).
    private func finish() throws(FUSEError) {
        let error: FSError? = lifecycle.withLock { lifecycle in
            if !lifecycle.finished {
                if let thread = lifecycle.thread { pthread_join(thread, nil) }
                lifecycle.thread = nil
                // The kernel sends no more requests; the vault is still open.
                beforeClose.withLock { $0 }?()
                notifiable.withLock { $0 = false }
                // Replies waiting for pushes are sent while the device is still open.
                cacheFill.close()
                fuse_session_exit(session.raw)
                // Closes the device; unmounts too if the loop ended while still mounted.
                fuse_session_unmount(session.raw)
                fuse_session_destroy(session.raw)
                context.release()
                do throws(FSError) { try fileSystem.close() } catch { lifecycle.closeError = error }
                lifecycle.finished = true
            }
            return lifecycle.closeError
        }
        if let error { throw .closeFailed(error) }
    }

    // MARK: Unmounting

    private static let detachFlag: Int32 = 2  // MNT_DETACH
    private static let busyRetryInterval: UInt32 = 100_000

    /// Takes the mount away from the kernel: the loop then reads ENODEV and ends.
    private func detach(lazy: Bool, busyTimeout: Double) throws(FUSEError) {
        let retries = max(0, Int(busyTimeout * 1e6) / Int(Self.busyRetryInterval))
        for attempt in 0...retries {
            let failure: Int32
            if geteuid() == 0 {
                if umount2(mountPoint, lazy ? Self.detachFlag : 0) == 0 { return }
                failure = errno
                // Not (or no longer) a mount point: the loop ends or has ended by itself.
                if failure == EINVAL || failure == ENOENT { return }
            } else {
                let status = Self.runFusermount(["-u", "-q"] + (lazy ? ["-z"] : []) + [mountPoint])
                if status == 0 || !isServing { return }
                failure = EBUSY
            }
            guard failure == EBUSY || failure == EINTR else {
                throw .unmountFailed("\(mountPoint): \(String(cString: strerror(failure)))")
            }
            if attempt < retries { usleep(Self.busyRetryInterval) }
        }
        throw .busy(mountPoint)
    }

    /// Runs fusermount3 (setuid root) for an unprivileged user; returns its exit status.
    private static func runFusermount(_ arguments: [String]) -> Int32 { ProcessCalls.run("fusermount3", arguments) }
}

/// libfuse's session. Only the loop thread and the mount's lifecycle (under its lock, after the
/// loop has been joined) touch it, and libfuse makes the calls made while the loop runs
/// (`fuse_session_exit`) thread-safe.
struct SessionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Whether the loop has ended, and how.
private final class LoopState: Sendable {
    let ended = Atomic<Bool>(false)
    let result = Atomic<Int32>(0)
}

/// What the loop thread runs: libfuse's multi-threaded loop until the mount goes away.
private final class LoopJob: Sendable {
    let session: SessionPointer
    let maxThreads: UInt32
    let state: LoopState

    init(session: SessionPointer, maxThreads: UInt32, state: LoopState) {
        self.session = session
        self.maxThreads = maxThreads
        self.state = state
    }

    func run() {
        let config = fuse_loop_cfg_create()
        fuse_loop_cfg_set_clone_fd(config, 0)
        fuse_loop_cfg_set_max_threads(config, maxThreads)
        let result = fuse_session_loop_mt(session.raw, config)
        fuse_loop_cfg_destroy(config)
        state.result.store(result, ordering: .relaxed)
        state.ended.store(true, ordering: .releasing)
    }
}

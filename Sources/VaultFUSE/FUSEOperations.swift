import CFuse
import Glibc
import VaultCrypto
import VaultFileSystem

/// The libfuse low-level operations table. Each callback converts its arguments, calls the
/// file system once, and ends in exactly one reply: the result, or `fuse_reply_err` with the
/// error's errno (an open that may write and a truncate are answered once the pushes queued
/// for their file are in, possibly from `KernelCacheFill`'s queue). No policy lives here.
///
/// The closures capture nothing (they are C function pointers); the file system is reached
/// through the request's userdata.
enum FUSEOperations {
    /// The largest write the kernel may send: more than 1 MiB ends the session with "reading
    /// device: Invalid argument" (libfuse's buffer is 1 MiB + header).
    static let maximumWrite: UInt32 = 1 << 20

    static func table() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()

        ops.`init` = { _, connection in
            guard let connection else { return }
            connection.pointee.max_write = FUSEOperations.maximumWrite
            connection.pointee.time_gran = 1
            // O_TRUNC arrives with open (the file system truncates), not as a separate setattr.
            connection.pointee.want |= UInt32(FUSE_CAP_ATOMIC_O_TRUNC) & connection.pointee.capable
            // Not wanted: NFS export (inode numbers are not stable across mounts), the
            // writeback cache (the kernel would keep size and mtime itself; O_APPEND and the
            // vault's mtime handling assume writes arrive as they happen), and the first form of
            // dropping set-ID bits here (v1 says nothing of who lacks CAP_FSETID; libfuse 3.14
            // wants it but never tells the kernel; FUSEDevice asks for v2, which says it).
            connection.pointee.want &= ~UInt32(FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_HANDLE_KILLPRIV)
        }

        ops.lookup = { request, parent, name in
            reply(request) { context throws(FSError) in
                replyEntry(request, context, try context.fileSystem.lookup(parent, bytes(name)))
            }
        }

        ops.forget = { request, inode, count in
            FUSEContext.of(request).fileSystem.forget(inode, count: count)
            fuse_reply_none(request)
        }

        ops.forget_multi = { request, count, forgets in
            let fileSystem = FUSEContext.of(request).fileSystem
            if let forgets {
                for index in 0..<count { fileSystem.forget(forgets[index].ino, count: forgets[index].nlookup) }
            }
            fuse_reply_none(request)
        }

        ops.getattr = { request, inode, _ in
            reply(request) { context throws(FSError) in
                replyAttributes(request, context, try context.fileSystem.attributes(inode))
            }
        }

        ops.setattr = { request, inode, attributes, toSet, _ in
            reply(request) { context throws(FSError) in
                guard let new = attributes?.pointee else { throw .invalidArgument }
                let changes = attributeChanges(new, toSet)
                let caller = Caller(request)
                // A store into a shared mapping comes here only as the WRITE of its page, maybe
                // after this utime; its mtime would then win over the one set here (ext4 takes
                // the store's time at its page fault). The kernel sends those pages first. Not
                // with a truncate, whose time is the clock's anyway: the kernel may hold the
                // file's WRITEs back until a truncate is answered (fuse_set_nowrite).
                if changes.modificationTime != nil, changes.size == nil, context.fileSystem.isOpenForWriting(inode) {
                    let handed = Handed(value: request)
                    context.cacheFill.afterWriteBack(of: inode) {
                        let request = handed.value
                        reply(request) { context throws(FSError) in
                            replyAttributes(request, context, try context.fileSystem.setAttributes(inode, changes, changedBy: caller))
                        }
                    }
                    return
                }
                let attributes = Handed(value: (request, try context.fileSystem.setAttributes(inode, changes, changedBy: caller)))
                let replySet: @Sendable () -> Void = { replyAttributes(attributes.value.0, context, attributes.value.1) }
                // The kernel drops its pages past a truncate after this reply: after any push into them.
                if changes.size != nil { context.cacheFill.afterFills(of: inode, replySet) } else { replySet() }
            }
        }

        ops.readlink = { request, inode in
            reply(request) { context throws(FSError) in
                let target = try context.fileSystem.readSymbolicLink(inode) + [0]
                target.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { _ = fuse_reply_readlink(request, $0.baseAddress) }
                }
            }
        }

        ops.mknod = { request, parent, name, mode, rdev in
            reply(request) { context throws(FSError) in
                replyEntry(request, context, try context.fileSystem.makeNode(parent, bytes(name), mode: UInt32(mode), rdev: UInt64(rdev),
                                                                             caller: Caller(request)))
            }
        }

        ops.mkdir = { request, parent, name, mode in
            reply(request) { context throws(FSError) in
                replyEntry(request, context, try context.fileSystem.makeDirectory(parent, bytes(name), mode: UInt32(mode),
                                                                                  caller: Caller(request)))
            }
        }

        ops.symlink = { request, target, parent, name in
            reply(request) { context throws(FSError) in
                replyEntry(request, context, try context.fileSystem.makeSymbolicLink(parent, bytes(name), target: bytes(target),
                                                                                     caller: Caller(request)))
            }
        }

        ops.link = { request, inode, parent, name in
            reply(request) { context throws(FSError) in
                replyEntry(request, context, try context.fileSystem.link(inode, into: parent, named: bytes(name)))
            }
        }

        ops.unlink = { request, parent, name in
            reply(request) { context throws(FSError) in
                try context.fileSystem.unlink(parent, bytes(name))
                fuse_reply_err(request, 0)
            }
        }

        ops.rmdir = { request, parent, name in
            reply(request) { context throws(FSError) in
                try context.fileSystem.removeDirectory(parent, bytes(name))
                fuse_reply_err(request, 0)
            }
        }

        ops.rename = { request, parent, name, newParent, newName, flags in
            reply(request) { context throws(FSError) in
                try context.fileSystem.rename(parent, bytes(name), to: newParent, bytes(newName),
                                              flags: FileSystem.RenameFlags(rawValue: UInt32(flags)))
                fuse_reply_err(request, 0)
            }
        }

        ops.create = { request, parent, name, mode, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                let (attributes, handle) = try context.fileSystem.create(parent, bytes(name), mode: UInt32(mode), flags: info.pointee.flags,
                                                                         caller: Caller(request))
                info.pointee.fh = handle
                info.pointee.keep_cache = context.fileSystem.keepsKernelCache(handle) ? 1 : 0
                let created = Handed(value: (request, entryParameters(context, attributes), info.pointee))
                // A name the kernel thought free may be a file it never saw (made by a sync),
                // now open for writing: as an open that may write, after that file's pushes.
                context.cacheFill.afterFills(of: attributes.inode) {
                    var (request, entry, info) = created.value
                    if fuse_reply_create(request, &entry, &info) != 0 {
                        // The kernel never saw the reply (the request was interrupted).
                        context.fileSystem.release(handle)
                        context.fileSystem.forget(attributes.inode, count: 1)
                    }
                }
            }
        }

        ops.open = { request, inode, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                info.pointee.fh = try context.fileSystem.open(inode, flags: info.pointee.flags, caller: Caller(request))
                // The kernel's page cache is kept across opens while the file has not changed
                // (a second read costs no request); otherwise the kernel drops it here.
                info.pointee.keep_cache = context.fileSystem.keepsKernelCache(info.pointee.fh) ? 1 : 0
                let opened = Handed(value: (request, info.pointee))
                let replyOpen: @Sendable (_ pushed: Bool) -> Void = { pushed in
                    var (request, info) = opened.value
                    if pushed { info.keep_cache = 1 }
                    if fuse_reply_open(request, &info) != 0 { context.fileSystem.release(info.fh) }
                }
                let flags = info.pointee.flags
                // A writer's pages must not meet a push of older ones (`KernelCacheFill`).
                if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
                    context.cacheFill.afterFills(of: inode) { replyOpen(false) }
                } else {
                    // A small file's pages go in before the reply: its read then asks nothing.
                    context.cacheFill.openForReading(inode, handle: info.pointee.fh, keepsCache: info.pointee.keep_cache != 0,
                                                     from: context.fileSystem, then: replyOpen)
                }
            }
        }

        ops.read = { request, inode, size, offset, info in
            reply(request) { context throws(FSError) in
                guard let info, offset >= 0 else { throw .invalidArgument }
                var atRandom: [Int] = []
                let pieces = try context.fileSystem.readPieces(info.pointee.fh, offset: UInt64(offset), count: size,
                                                               chunksReadAtRandom: &atRandom)
                // Queued before the reply, so that whatever the reader does next comes after it.
                for index in atRandom { context.cacheFill.fill(inode, chunk: index, from: context.fileSystem) }
                withIOVectors(pieces[...], []) { vectors in _ = fuse_reply_iov(request, vectors, Int32(vectors.count)) }
            }
        }

        ops.write = { request, _, buffer, size, offset, info in
            reply(request) { context throws(FSError) in
                guard let info, offset >= 0 else { throw .invalidArgument }
                // The request's own buffer, not copied: libfuse keeps it until the callback returns.
                let data = UnsafeRawBufferPointer(start: buffer, count: buffer == nil ? 0 : size)
                let written = try context.fileSystem.write(info.pointee.fh, offset: UInt64(offset), bytes: data.bytes,
                                                           changedBy: Caller(request))
                fuse_reply_write(request, written)
            }
        }

        // No flush: a close has nothing to write (every write is in the vault as it happens, and
        // locks are the kernel's), and libfuse's ENOSYS for it makes the kernel stop sending
        // FLUSH at all: one round trip less for every close(2).

        ops.release = { request, _, info in
            if let info { FUSEContext.of(request).fileSystem.release(info.pointee.fh) }
            fuse_reply_err(request, 0)
        }

        ops.fsync = { request, _, _, _ in
            reply(request) { context throws(FSError) in
                try context.fileSystem.synchronize()
                fuse_reply_err(request, 0)
            }
        }

        ops.lseek = { request, _, offset, whence, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                fuse_reply_lseek(request, off_t(clamping: try context.fileSystem.seek(info.pointee.fh, from: Int64(offset), whence: whence)))
            }
        }

        ops.opendir = { request, inode, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                info.pointee.fh = try context.fileSystem.openDirectory(inode)
                if fuse_reply_open(request, info) != 0 { context.fileSystem.releaseDirectory(info.pointee.fh) }
            }
        }

        ops.readdir = { request, _, size, offset, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                // A dirent takes at least 32 bytes: never ask for more entries than fit.
                let entries = try context.fileSystem.readDirectory(info.pointee.fh, offset: Int64(offset), limit: max(1, size / 32))
                replyDirectory(request, size: size, entries)
            }
        }

        ops.readdirplus = { request, _, size, offset, info in
            reply(request) { context throws(FSError) in
                guard let info else { throw .invalidArgument }
                // A direntplus takes at least 152 bytes.
                let listed = try context.fileSystem.readDirectoryPlus(info.pointee.fh, offset: Int64(offset), limit: max(1, size / 152))
                replyDirectoryPlus(request, context, size: size, listed)
            }
        }

        ops.releasedir = { request, _, info in
            if let info { FUSEContext.of(request).fileSystem.releaseDirectory(info.pointee.fh) }
            fuse_reply_err(request, 0)
        }

        ops.fsyncdir = { request, _, _, _ in
            reply(request) { context throws(FSError) in
                try context.fileSystem.synchronize()
                fuse_reply_err(request, 0)
            }
        }

        ops.statfs = { request, _ in
            reply(request) { context throws(FSError) in
                var statistics = statvfs(try context.fileSystem.statistics())
                fuse_reply_statfs(request, &statistics)
            }
        }

        ops.setxattr = { request, inode, name, value, size, flags in
            reply(request) { context throws(FSError) in
                try context.fileSystem.setExtendedAttribute(inode, bytes(name), bytes(value, count: size),
                                                            create: flags & xattrCreate != 0, replace: flags & xattrReplace != 0)
                fuse_reply_err(request, 0)
            }
        }

        ops.getxattr = { request, inode, name, size in
            reply(request) { context throws(FSError) in
                replyAttributeBytes(request, size: size, try context.fileSystem.extendedAttribute(inode, bytes(name)))
            }
        }

        ops.listxattr = { request, inode, size in
            reply(request) { context throws(FSError) in
                let names = try context.fileSystem.extendedAttributeNames(inode)
                replyAttributeBytes(request, size: size, names.flatMap { $0 + [0] })
            }
        }

        ops.removexattr = { request, inode, name in
            reply(request) { context throws(FSError) in
                try context.fileSystem.removeExtendedAttribute(inode, bytes(name))
                fuse_reply_err(request, 0)
            }
        }

        return ops
    }
}

// MARK: Replies


/// Runs `body`, which replies on success; a thrown error becomes the one reply instead.
private func reply(_ request: fuse_req_t?, _ body: (FUSEContext) throws(FSError) -> Void) {
    do {
        try body(FUSEContext.of(request))
    } catch {
        fuse_reply_err(request, error.errno)
    }
}

private func entryParameters(_ context: FUSEContext, _ attributes: FileAttributes) -> fuse_entry_param {
    var entry = fuse_entry_param()
    entry.ino = attributes.inode
    // Item ids are never reused within a vault, so one generation suffices.
    entry.generation = 1
    entry.attr = stat(attributes)
    entry.attr_timeout = context.attributeTimeout
    entry.entry_timeout = context.entryTimeout
    return entry
}

/// Replies with an entry; the lookup it counted is taken back if the kernel did not get it.
private func replyEntry(_ request: fuse_req_t?, _ context: FUSEContext, _ attributes: FileAttributes) {
    var entry = entryParameters(context, attributes)
    if fuse_reply_entry(request, &entry) != 0 { context.fileSystem.forget(attributes.inode, count: 1) }
}

private func replyAttributes(_ request: fuse_req_t?, _ context: FUSEContext, _ attributes: FileAttributes) {
    var status = stat(attributes)
    fuse_reply_attr(request, &status, context.attributeTimeout)
}

private func replyDirectory(_ request: fuse_req_t?, size: Int, _ entries: [DirectoryEntry]) {
    guard size > 0 else {
        fuse_reply_buf(request, nil, 0)
        return
    }
    var buffer = [CChar](repeating: 0, count: size)
    var used = 0
    buffer.withUnsafeMutableBufferPointer { buffer in
        for entry in entries {
            var status = stat()
            status.st_ino = ino_t(entry.inode)
            status.st_mode = mode_t(entry.type.modeBits)
            let needed = (entry.name + [0]).withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) { name in
                    fuse_add_direntry(request, buffer.baseAddress! + used, size - used, name.baseAddress, &status, off_t(entry.nextOffset))
                }
            }
            if needed > size - used { break }
            used += needed
        }
        _ = fuse_reply_buf(request, buffer.baseAddress, used)
    }
}

/// The lookups counted for entries that did not fit are taken back.
private func replyDirectoryPlus(_ request: fuse_req_t?, _ context: FUSEContext, size: Int,
                                _ listed: [(entry: DirectoryEntry, attributes: FileAttributes?)]) {
    var buffer = [CChar](repeating: 0, count: max(size, 1))
    var used = 0
    var sent = 0
    buffer.withUnsafeMutableBufferPointer { buffer in
        for (entry, attributes) in listed {
            var parameters = fuse_entry_param()
            if let attributes {
                parameters = entryParameters(context, attributes)
            } else {
                // "." and "..": no lookup; the kernel takes only the inode and type.
                parameters.attr.st_ino = ino_t(entry.inode)
                parameters.attr.st_mode = mode_t(entry.type.modeBits)
            }
            let needed = (entry.name + [0]).withUnsafeBufferPointer { name in
                name.withMemoryRebound(to: CChar.self) { name in
                    fuse_add_direntry_plus(request, buffer.baseAddress! + used, size - used, name.baseAddress, &parameters,
                                           off_t(entry.nextOffset))
                }
            }
            if needed > size - used { break }
            used += needed
            sent += 1
        }
        if fuse_reply_buf(request, buffer.baseAddress, used) != 0 { sent = 0 }
    }
    for (entry, attributes) in listed.dropFirst(sent) where attributes != nil { context.fileSystem.forget(entry.inode, count: 1) }
}

/// getxattr/listxattr: size 0 asks for the length; a buffer too small is ERANGE.
private func replyAttributeBytes(_ request: fuse_req_t?, size: Int, _ value: [UInt8]) {
    if size == 0 {
        fuse_reply_xattr(request, value.count)
    } else if value.count > size {
        fuse_reply_err(request, ERANGE)
    } else {
        value.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { _ = fuse_reply_buf(request, $0.baseAddress, $0.count) }
        }
    }
}

// MARK: Arguments

private let xattrCreate: Int32 = 1
private let xattrReplace: Int32 = 2

private func attributeChanges(_ new: stat, _ toSet: Int32) -> AttributeChanges {
    func has(_ flag: Int32) -> Bool { toSet & flag != 0 }
    var changes = AttributeChanges()
    if has(FUSE_SET_ATTR_MODE) { changes.mode = UInt32(new.st_mode) }
    if has(FUSE_SET_ATTR_UID) { changes.uid = new.st_uid }
    if has(FUSE_SET_ATTR_GID) { changes.gid = new.st_gid }
    if has(FUSE_SET_ATTR_SIZE) { changes.size = UInt64(max(0, new.st_size)) }
    changes.dropsSetIDs = has(FUSE_SET_ATTR_KILL_SUID)
    if has(FUSE_SET_ATTR_ATIME_NOW) {
        changes.accessTime = .now
    } else if has(FUSE_SET_ATTR_ATIME) {
        changes.accessTime = .set(Timestamp(seconds: Int64(new.st_atim.tv_sec), nanoseconds: Int64(new.st_atim.tv_nsec)))
    }
    if has(FUSE_SET_ATTR_MTIME_NOW) {
        changes.modificationTime = .now
    } else if has(FUSE_SET_ATTR_MTIME) {
        changes.modificationTime = .set(Timestamp(seconds: Int64(new.st_mtim.tv_sec), nanoseconds: Int64(new.st_mtim.tv_nsec)))
    }
    return changes
}

/// iovecs over the pieces of a read, valid inside `body`: the reply copies from the chunks
/// themselves, not from a joined copy.
private func withIOVectors(_ pieces: ArraySlice<PlaintextSlice>, _ done: [iovec], _ body: ([iovec]) -> Void) {
    guard let first = pieces.first else { return body(done) }
    first.withUnsafeBytes { bytes in
        let vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        withIOVectors(pieces.dropFirst(), done + [vector], body)
    }
}

import CFuse
import Glibc
import VaultFileSystem

/// Conversions between the file system's types and libfuse's C structures.
extension stat {
    init(_ attributes: FileAttributes) {
        self.init()
        st_ino = ino_t(attributes.inode)
        st_mode = mode_t(attributes.mode)
        st_nlink = nlink_t(attributes.linkCount)
        st_uid = attributes.uid
        st_gid = attributes.gid
        st_rdev = dev_t(attributes.rdev)
        st_size = off_t(clamping: attributes.size)
        st_blocks = blkcnt_t(clamping: attributes.blocks)
        st_blksize = blksize_t(attributes.blockSize)
        st_atim = timespec(attributes.accessTime)
        st_mtim = timespec(attributes.modificationTime)
        st_ctim = timespec(attributes.changeTime)
    }
}

extension timespec {
    init(_ time: Timestamp) {
        self.init(tv_sec: time_t(time.seconds), tv_nsec: Int(time.nanoseconds))
    }
}

extension statvfs {
    init(_ statistics: VolumeStatistics) {
        self.init()
        f_bsize = UInt(statistics.blockSize)
        f_frsize = UInt(statistics.blockSize)
        f_blocks = fsblkcnt_t(statistics.totalBlocks)
        f_bfree = fsblkcnt_t(statistics.freeBlocks)
        f_bavail = fsblkcnt_t(statistics.availableBlocks)
        f_files = fsfilcnt_t(statistics.totalFiles)
        f_ffree = fsfilcnt_t(statistics.freeFiles)
        f_favail = fsfilcnt_t(statistics.freeFiles)
        f_namemax = UInt(statistics.maximumNameLength)
    }
}

extension Caller {
    /// The process behind a request.
    init(_ request: fuse_req_t?) {
        let context = fuse_req_ctx(request)!.pointee
        self.init(uid: context.uid, gid: context.gid, umask: UInt32(context.umask))
    }
}

/// The bytes of a C string that libfuse passes (a name, a link target).
func bytes(_ string: UnsafePointer<CChar>?) -> [UInt8] {
    guard let string else { return [] }
    return Array(UnsafeRawBufferPointer(start: string, count: strlen(string)))
}

/// A copy of a C buffer.
func bytes(_ pointer: UnsafeRawPointer?, count: Int) -> [UInt8] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
}

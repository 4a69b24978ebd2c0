import CFuse
import Glibc
import Synchronization

/// The session's reads and writes of /dev/fuse, through libfuse's custom I/O, for one thing
/// libfuse 3.14 cannot say: FUSE_HANDLE_KILLPRIV_V2 in the INIT reply. With it the kernel stops
/// asking for `security.capability` before every write (it asks once, until the file's
/// attributes next change) and leaves dropping set-ID bits and capabilities on write, truncate
/// and chown to the file system, telling it when the caller lacks CAP_FSETID for a truncate.
/// Everything else passes through unchanged.
enum FUSEDevice {
    /// Installs the pass-through on a mounted session; false if libfuse refused it (the session
    /// then keeps its own I/O, and the kernel its own handling of set-ID bits).
    static func install(on session: OpaquePointer) -> Bool {
        var io = fuse_custom_io()
        io.read = { fd, buffer, length, userdata in
            let count = Glibc.read(fd, buffer, length)
            if count >= FUSEDevice.requestHeaderSize + FUSEDevice.initFlagsOffset + 4, let buffer, let userdata,
               buffer.load(fromByteOffset: 4, as: UInt32.self) == FUSEDevice.opcodeInit {
                let unique = buffer.load(fromByteOffset: 8, as: UInt64.self)
                let offered = buffer.load(fromByteOffset: FUSEDevice.requestHeaderSize + FUSEDevice.initFlagsOffset, as: UInt32.self)
                FUSEDevice.state(userdata).pendingInit.store(offered & FUSEDevice.killPrivilegesV2 != 0 ? unique : 0, ordering: .releasing)
            }
            return count
        }
        io.writev = { fd, vectors, count, userdata in
            if let vectors, let userdata, count >= 2 {
                let pending = FUSEDevice.state(userdata).pendingInit.load(ordering: .acquiring)
                if pending != 0, vectors[0].iov_len >= FUSEDevice.replyHeaderSize, vectors[1].iov_len >= FUSEDevice.initFlagsOffset + 4,
                   let header = vectors[0].iov_base, let reply = vectors[1].iov_base,
                   header.load(fromByteOffset: 8, as: UInt64.self) == pending, header.load(fromByteOffset: 4, as: Int32.self) == 0 {
                    let flags = reply.load(fromByteOffset: FUSEDevice.initFlagsOffset, as: UInt32.self)
                    reply.storeBytes(of: flags | FUSEDevice.killPrivilegesV2, toByteOffset: FUSEDevice.initFlagsOffset, as: UInt32.self)
                    FUSEDevice.state(userdata).pendingInit.store(0, ordering: .releasing)
                    FUSEDevice.context(userdata).fileSystem.dropsPrivileges = true
                }
            }
            return Glibc.writev(fd, vectors, count)
        }
        return fuse_session_custom_io(session, &io, fuse_session_fd(session)) == 0
    }

    /// Per session, in its userdata (`FUSEContext`).
    final class State: Sendable {
        /// The unique of an INIT request whose kernel offered the flag, until its reply is sent.
        let pendingInit = Atomic<UInt64>(0)
    }

    fileprivate static func context(_ userdata: UnsafeMutableRawPointer) -> FUSEContext {
        Unmanaged<FUSEContext>.fromOpaque(userdata).takeUnretainedValue()
    }

    fileprivate static func state(_ userdata: UnsafeMutableRawPointer) -> State { context(userdata).device }

    // linux/fuse.h: fuse_in_header is 40 bytes, fuse_out_header 16; fuse_init_in and
    // fuse_init_out both hold `flags` at byte 12.
    fileprivate static let requestHeaderSize = 40
    fileprivate static let replyHeaderSize = 16
    fileprivate static let initFlagsOffset = 12
    fileprivate static let opcodeInit: UInt32 = 26
    fileprivate static let killPrivilegesV2: UInt32 = 1 << 28
}

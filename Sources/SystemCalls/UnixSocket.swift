import CSystem
import Glibc

/// A Unix stream socket bound to a path. The mount daemon listens on one in its private
/// runtime folder (see `RuntimeFolder`), and `dotsafe lock` connects to it. Abstract names are
/// not used: /proc/net/unix shows them to every local user (R-DEN-4).
public final class UnixSocket: Sendable {
    public let descriptor: Int32

    /// The process at the other end, as the kernel saw it at connect (SO_PEERCRED).
    public struct Credentials: Sendable, Equatable {
        public var processID: pid_t
        public var userID: uid_t
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case inUse, notListening, notAnswering, tooLong, system(SystemError)
        public var description: String {
            switch self {
            case .inUse: "the address is in use"
            case .notListening: "nothing listens there"
            case .notAnswering: "the listener takes no connection (its queue is full)"
            case .tooLong: "the socket path is too long"
            case .system(let error): error.description
            }
        }
    }

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { SystemCall.close(descriptor) }

    /// Binds and listens on `path` (a new file: `inUse` if one is there).
    public static func listen(_ path: String) throws(Failure) -> UnixSocket {
        try reachable(path) { path throws(Failure) in try listen(short: path) }
    }

    /// Connects to the listener at `path`. A listener that accepts nothing (a stopped process)
    /// fills its queue, and then connect waits until it accepts: `waiting` bounds that wait
    /// (`notAnswering` after that many seconds); nil waits as long as it takes.
    public static func connect(_ path: String, waiting seconds: Int? = nil) throws(Failure) -> UnixSocket {
        try reachable(path) { path throws(Failure) in try connect(short: path, waiting: seconds) }
    }

    /// Runs `body` with `path`, or, when `path` does not fit a socket address (108 bytes: a
    /// deep XDG_RUNTIME_DIR), with the same file reached through the folder's descriptor,
    /// `/proc/self/fd/N/NAME`, which fits.
    private static func reachable(_ path: String, _ body: (String) throws(Failure) -> UnixSocket) throws(Failure) -> UnixSocket {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard path.utf8.count >= capacity, let slash = path.lastIndex(of: "/") else { return try body(path) }
        let folder = slash == path.startIndex ? "/" : String(path[..<slash])
        let folderDescriptor = dotsafe_open_folder_path(folder)
        guard folderDescriptor >= 0 else { throw .system(SystemError("open \(folder)", errno)) }
        defer { SystemCall.close(folderDescriptor) }
        return try body("/proc/self/fd/\(folderDescriptor)/" + path[path.index(after: slash)...])
    }

    private static func listen(short path: String) throws(Failure) -> UnixSocket {
        let socket = try make()
        var (address, length) = try address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.descriptor, $0, length) }
        }
        if bound != 0 { throw errno == EADDRINUSE ? .inUse : .system(SystemError("bind", errno)) }
        guard Glibc.listen(socket.descriptor, 16) == 0 else { throw .system(SystemError("listen", errno)) }
        return socket
    }

    private static func connect(short path: String, waiting seconds: Int?) throws(Failure) -> UnixSocket {
        let socket = try make()
        var (address, length) = try address(path)
        // A Unix socket's connect waits for room in the listener's queue as long as its send timeout.
        if let seconds { socket.setTimeout(SO_SNDTIMEO, seconds: seconds) }
        while true {
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket.descriptor, $0, length) }
            }
            if connected == 0 { return socket }
            if errno == EINTR { continue }
            if errno == EAGAIN { throw .notAnswering }
            throw errno == ECONNREFUSED || errno == ENOENT ? .notListening : .system(SystemError("connect", errno))
        }
    }

    /// The next connection.
    public func accept() throws(Failure) -> UnixSocket {
        do throws(SystemError) {
            return UnixSocket(descriptor: try SystemCall.retrying("accept") { dotsafe_accept_cloexec(descriptor) })
        } catch { throw .system(error) }
    }

    /// Who is at the other end.
    public func peerCredentials() throws(Failure) -> Credentials {
        var pid: pid_t = 0, uid: uid_t = 0
        guard dotsafe_peer_credentials(descriptor, &pid, &uid) == 0 else { throw .system(SystemError("SO_PEERCRED", errno)) }
        return Credentials(processID: pid, userID: uid)
    }

    /// Makes `receiveLine` give up after `seconds` without data, so that a peer that says
    /// nothing cannot hold the thread serving it.
    public func setReceiveTimeout(seconds: Int) {
        setTimeout(SO_RCVTIMEO, seconds: seconds)
    }

    private func setTimeout(_ option: Int32, seconds: Int) {
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one line; a peer that went away is ignored (MSG_NOSIGNAL: no SIGPIPE).
    public func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                try? SystemCall.retrying("send") {
                    Glibc.send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                }
            }
            guard let n, n > 0 else { return }
            sent += n
        }
    }

    /// One line, or nil when the other side closed first or the receive timeout passed.
    public func receiveLine(limit: Int = 4096) -> String? {
        var line: [UInt8] = []
        while line.count < limit {
            var byte: UInt8 = 0
            guard let n = try? SystemCall.retrying("recv", { recv(descriptor, &byte, 1, 0) }), n > 0 else {
                return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
            }
            if byte == 0x0a { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    private static func make() throws(Failure) -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(SystemError("socket", errno)) }
        return UnixSocket(descriptor: fd)
    }

    private static func address(_ path: String) throws(Failure) -> (sockaddr_un, socklen_t) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { throw .tooLong }
        withUnsafeMutableBytes(of: &address.sun_path) { target in
            for (i, byte) in bytes.enumerated() { target[i] = byte }
        }
        return (address, socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }
}

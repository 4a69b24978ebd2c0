import CSystem
import Glibc

/// Sockets in Linux's abstract namespace: they leave no file anywhere and vanish when their
/// process dies, which makes them the mount guard (one mount per vault, R-FS-3) and the
/// channel `dotsafe lock` talks to a daemon on. The one file of the CLI with pointer code.
final class UnixSocket: Sendable {
    let descriptor: Int32

    enum Failure: Error, Equatable { case inUse, notListening, system(String, Int32) }

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Binds and listens on `name`; `inUse` when another process holds it.
    static func listen(_ name: String) throws(Failure) -> UnixSocket {
        let socket = try make()
        var (address, length) = address(name)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.descriptor, $0, length) }
        }
        if bound != 0 { throw errno == EADDRINUSE ? .inUse : .system("bind", errno) }
        guard Glibc.listen(socket.descriptor, 8) == 0 else { throw .system("listen", errno) }
        return socket
    }

    static func connect(_ name: String) throws(Failure) -> UnixSocket {
        let socket = try make()
        var (address, length) = address(name)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket.descriptor, $0, length) }
        }
        if connected != 0 { throw errno == ECONNREFUSED || errno == ENOENT ? .notListening : .system("connect", errno) }
        return socket
    }

    /// The next connection, with the uid of the process behind it.
    func accept() throws(Failure) -> (UnixSocket, uid: uid_t) {
        while true {
            let fd = Glibc.accept(descriptor, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                throw .system("accept", errno)
            }
            let peer = UnixSocket(descriptor: fd)
            var uid: uid_t = 0
            guard dotsafe_peer_uid(fd, &uid) == 0 else { throw .system("getsockopt", errno) }
            return (peer, uid)
        }
    }

    func send(_ line: String) {
        var bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            sent += n
        }
    }

    /// One line, or nil when the other side closed first.
    func receiveLine() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = recv(descriptor, &byte, 1, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 0x0a { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Stops accept() in another thread.
    func shutdownBoth() { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }

    private static func make() throws(Failure) -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        return UnixSocket(descriptor: fd)
    }

    /// An abstract address: a leading NUL, then the name (no file is made).
    private static func address(_ name: String) -> (sockaddr_un, socklen_t) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8.prefix(100))
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0
            for (i, byte) in bytes.enumerated() { path[i + 1] = byte }
        }
        let length = MemoryLayout<sa_family_t>.size + 1 + bytes.count
        return (address, socklen_t(length))
    }
}

import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// A daemon's lock channel is a socket in the runtime folder: none outlives a mount that failed
/// to start, and one that a daemon killed while starting left behind goes at the next mount.
@Suite struct LockChannelCleanupTests {
    static let patterns = StatusTests.patterns

    /// The sockets in the runtime folder of `s`.
    static func sockets(_ s: StatusTests.Session) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: s.runtime + "/dotsafe")) ?? []).filter { $0.hasSuffix(".sock") }
    }

    /// The daemon opens its channel before the vault: a vault that does not open (here: no
    /// vault shared by that contact code) must not leave the socket.
    @Test func aMountWhoseVaultDoesNotOpenLeavesNoSocket() throws {
        let s = try StatusTests.Session()
        defer { s.h.finish() }
        let vault = try s.h.mountPoint()
        try #require(s.mount(vault, pattern: Self.patterns[0]).status == 0)
        let contact = s.dotsafe(["contact", vault])
        let code = try #require(contact.output.split(separator: "\n").first.map(String.init), "\(contact)")
        #expect(s.dotsafe(["lock", vault]).status == 0)
        #expect(Self.sockets(s).isEmpty)
        for _ in 0..<2 {
            let failed = s.mount(vault, pattern: Self.patterns[1], options: ["--shared", code])
            #expect(failed.status == 1, "\(failed)")
            #expect(failed.error == "dotsafe: no vault shared by that contact code with the vault this pattern opens is in this storage\n", "\(failed)")
            #expect(Self.sockets(s).isEmpty, "\(Self.sockets(s))")
        }
        #expect(!MountHarness.isMounted(vault))
    }

    /// A socket with no mount record that nobody listens on (a daemon killed while it started)
    /// is removed by the next mount; a fresh one, whose maker may be about to listen, is not.
    @Test func anOrphanSocketGoesAtTheNextMount() throws {
        let s = try StatusTests.Session()
        defer { s.h.finish() }
        let folder = s.runtime + "/dotsafe"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let old = folder + "/" + String(repeating: "0a", count: 16) + ".sock", fresh = folder + "/" + String(repeating: "0b", count: 16) + ".sock"
        // Bound by relative names: the test folder's path may pass sun_path's 108 bytes.
        s.h.sh("""
            cd '\(folder)' && python3 -c 'import socket,sys
            for name in sys.argv[1:]: socket.socket(socket.AF_UNIX).bind(name)' '\((old as NSString).lastPathComponent)' \
                '\((fresh as NSString).lastPathComponent)'
            touch -h -d '1 minute ago' '\(old)'
            """)
        #expect(Self.sockets(s).sorted() == [old, fresh].map { ($0 as NSString).lastPathComponent }.sorted())
        let vault = try s.h.mountPoint()
        try #require(s.mount(vault, pattern: Self.patterns[0]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: old), "the orphan socket was left")
        #expect(FileManager.default.fileExists(atPath: fresh), "a socket made in the last seconds was removed")
        #expect(Self.sockets(s).count == 2, "\(Self.sockets(s))")
        #expect(s.dotsafe(["lock", vault]).status == 0)
        #expect(Self.sockets(s) == [(fresh as NSString).lastPathComponent])
        unlink(fresh)
    }
}

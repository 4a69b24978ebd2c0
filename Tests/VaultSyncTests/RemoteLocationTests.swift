import Testing
@testable import VaultSync

@Suite struct RemoteLocationTests {
    @Test func kindsAndNames() throws {
        let named = try RemoteLocation("mine:vaults/storage")
        #expect(named.kind == .named("mine") && named.description == "mine:vaults/storage")
        #expect(named.file("abc") == "mine:vaults/storage/abc")
        let root = try RemoteLocation("mine:")
        #expect(root.file("abc") == "mine:abc")
        let overridden = try RemoteLocation("mine,pass=secret:storage")
        #expect(overridden.kind == .named("mine") && overridden.description == "mine:storage")
        let onTheFly = try RemoteLocation(":sftp,host=example,pass='se:cret':storage/x")
        #expect(onTheFly.kind == .onTheFly(backend: "sftp") && onTheFly.description == ":sftp:storage/x")
        let local = try RemoteLocation("/media/usb/storage")
        #expect(local.kind == .localFolder && local.description == "/media/usb/storage")
        #expect(try RemoteLocation("./a:b").kind == .localFolder, "a slash before the colon makes a path")
        #expect(throws: RemoteError.self) { try RemoteLocation("") }
        #expect(throws: RemoteError.self) { try RemoteLocation("a:\nb") }
    }

    @Test func lastErrorLeavesOutTheRemoteAndTheClock() {
        let said = """
            2026/12/01 15:23:23 ERROR : : error listing: x
            2026/12/01 15:23:23 Failed to create file system for ":webdav,url='http://h':st": read metadata failed: dial tcp 127.0.0.1:1: connect: connection refused
            """
        let line = RemoteError.lastError(Array(said.utf8), hiding: ":webdav,url='http://h':st")
        #expect(line == "Failed to create file system for \"(remote)\": read metadata failed: dial tcp 127.0.0.1:1: connect: connection refused")
    }
}

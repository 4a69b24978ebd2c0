
/// A storage file written but not named yet (O_TMPFILE): no one listing the folder sees it, and
/// once dropped, or after a crash, it is gone. `StorageFolder.createGroup(_:written:)` names it
/// with its group. A chunk written behind into a group being assembled waits as one of these,
/// not as its bytes in memory (docs/PERFORMANCE.md, "Storage files past the page cache").
public final class UnnamedFile: Sendable {
    let descriptor: Int32
    init(descriptor: Int32) { self.descriptor = descriptor }
    deinit { Syscalls.close(descriptor) }
}

import Testing
@testable import VaultFileSystem

/// The table of the inodes the kernel knows: lookup counts, parents, and whether the kernel's
/// page cache of a file may be kept at its next open.
@Suite struct InodeTableTests {
    @Test func theKernelsPageCacheIsKeptOnlyForTheVersionItHolds() {
        var table = InodeTable()
        var kept = table.opened(5, at: 0)
        #expect(!kept, "an inode the kernel does not know")
        let first = table.remember(5, parent: 1)
        #expect(first)
        kept = table.opened(5, at: 0)
        #expect(!kept, "the first open: nothing cached yet")
        kept = table.opened(5, at: 0)
        #expect(kept)
        kept = table.opened(5, at: 1)
        #expect(!kept)
        let again = table.remember(5, parent: 2)
        #expect(!again && table.parent(5) == 2 && table.lookups(5) == 2)
        let gone = (table.forget(5, count: 1), table.forget(5, count: 1))
        #expect(!gone.0 && gone.1)
        let back = table.remember(5, parent: 1)
        #expect(back)
        kept = table.opened(5, at: 1)
        #expect(!kept, "a forgotten inode starts unknown")
    }
}

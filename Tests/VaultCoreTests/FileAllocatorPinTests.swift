import Testing
@testable import VaultCore

/// Files a remote root uses stay out of the free numbers while that root is on the remote
/// (FORMAT.md §13.11): a new file under such a number would replace the remote's copy at the
/// next upload, under a root that still reads the old one.
@Suite struct FileAllocatorPinTests {
    @Test func aFreedFileThatAPinNamesIsNotHandedOutUntilThePinGoes() {
        var allocator = FileAllocator(newVaultWithCovers: 4)
        let numbers = (0..<5).map { _ in allocator.allocate() }
        allocator.didCommit()
        allocator.release(numbers[2])
        allocator.didCommit()
        #expect(allocator.freeNumbers.contains(numbers[2]))

        // A sync's commit pins the files of the remote root it read: freed here, used there.
        allocator.pin([numbers[2]])
        let later = (0..<40).map { _ in allocator.allocate() }
        #expect(!later.contains(numbers[2]) && !allocator.freeNumbers.contains(numbers[2]))

        // The next root is up and no longer uses it: free again after the next commit.
        allocator.didCommit()
        allocator.pin([])
        allocator.publishedPins(stillUsed: [])
        allocator.didCommit()
        #expect(allocator.freeNumbers.contains(numbers[2]))
    }
}

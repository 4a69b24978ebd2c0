import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-COV-3: covers get new bytes when the vault saves: at most once every 30 s, always at a lock
/// that follows a save, never when nothing was saved.
@Suite struct CoverRefreshTests {
    @Test func coversMoveWithSavesAndTheClock() throws {
        let storage = try TestVaults.storage()
        let clock = ManualClock()
        let setup = try TestVaults.open(storage, clock: clock)
        // No refill (§9.2 step 6): this lock then rewrites the covers and nothing else.
        setup.state.withLock { $0.writer.refillsFreedFiles = false }
        try setup.makeFile("a", [1])
        try setup.commit()
        try setup.setAttributes(Vault.rootID, mtime: 1)
        try setup.commit()
        var before = storage.snapshot
        try setup.lock()
        let covers = SnapshotDiff(before, storage.snapshot).written
        try #require((2...6).contains(covers.count), "a lock after a save rewrites exactly the covers")

        func coversChanged(_ body: () throws -> Void) rethrows -> Bool {
            let before = storage.snapshot
            try body()
            let diff = SnapshotDiff(before, storage.snapshot)
            let changed = covers.filter { diff.changed.contains($0) }
            #expect(changed.isEmpty || changed.count == covers.count, "covers move together")
            return !changed.isEmpty
        }

        let vault = try TestVaults.open(storage, clock: clock)
        var n = 0
        func save() throws { n += 1; try vault.makeFile("f\(n)", [UInt8(n)]); try vault.commit() }
        #expect(try coversChanged { try save() }, "the first save of a session")
        clock.advance(seconds: 10)
        #expect(try !coversChanged { try save() }, "10 s later")
        clock.advance(seconds: 19)
        #expect(try !coversChanged { try save() }, "29 s after the refresh")
        clock.advance(seconds: 2)
        #expect(try coversChanged { try save() }, "31 s after the refresh")
        #expect(try !coversChanged { try vault.commit() }, "a commit with nothing to save")
        clock.advance(seconds: 60)
        #expect(try !coversChanged { try vault.commit() }, "nothing to save, however late")
        #expect(try coversChanged { try save() }, "a save after 60 s")
        #expect(try !coversChanged { try vault.lock() }, "lock right after a refresh with no save since")

        let next = try TestVaults.open(storage, clock: clock)
        before = storage.snapshot
        try next.makeFile("g", [2])
        try next.commit()
        try next.makeFile("h", [3])
        try next.commit()
        #expect(try coversChanged { try next.lock() }, "lock after saves that did not refresh")
        try checkStorageInvariants(storage)
    }
}

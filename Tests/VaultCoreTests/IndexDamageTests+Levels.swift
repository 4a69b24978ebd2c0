import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// A damaged interior page (docs/FORMAT.md §13.5, §13.6) fails the open as a damaged leaf does
/// (`damagedIndexPageFailsTheOpen`): the error names the page, and nothing is written.
extension IndexDamageTests {
    enum InteriorDamage: String, CaseIterable, Sendable { case bitFlip, zeroFill, truncated, deleted, olderVersion, leafInItsPlace }

    static let smallFanOut = PageTable.FanOut(root: 2, interior: 3)

    @Test(arguments: InteriorDamage.allCases)
    func damagedInteriorPageFailsTheOpen(_ damage: InteriorDamage) throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage, count: 4_096)
        let vault = try TestVaults.open(storage, fanOut: Self.smallFanOut)
        // Counted page writes: no refilled files among them (§9.2 step 6).
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        let name = { (i: Int) in "\(i)-" + String(repeating: "n", count: 200) }
        for i in 0..<2_300 { try vault.makeFile(name(i), []) }
        try vault.commit()
        func parents() -> [UInt64] { vault.state.withLock { $0.committer.pageTable.parentRefs.map(\.fileNumber) } }
        func leaves() -> [UInt64] { vault.state.withLock { $0.committer.pageTable.pages.map(\.ref!.fileNumber) } }
        try #require(parents().count >= 2, "the interior level")
        // One file changed: its leaf and the parent above it are written again, in other files.
        let formerParents = parents()
        let formerBytes = Dictionary(uniqueKeysWithValues: formerParents.map { ($0, storage.bytes(numbers.name($0))) })
        try vault.write(try vault.id(at: name(1_000)), offset: 0, bytes: [1])
        try vault.commit()
        let changed = parents().enumerated().filter { !formerParents.contains($0.element) }
        try #require(changed.count == 1 && parents().count == formerParents.count, "one parent written again: \(changed)")
        let (index, parent) = changed[0]
        let page = numbers.name(parent)
        let leaf = numbers.name(leaves().first { !formerParents.contains($0) && !parents().contains($0) }!)
        try vault.lock()

        switch damage {
        case .bitFlip: storage.flipBit(page, at: 50_000)
        case .zeroFill: storage.tamper(page, with: [UInt8](repeating: 0, count: Format.fileSize))
        case .truncated: storage.tamper(page, with: Array(storage.bytes(page).dropLast(16)))
        case .deleted: storage.tamper(page, with: nil)
        case .olderVersion: storage.tamper(page, with: formerBytes[formerParents[index]]!)
        case .leafInItsPlace: storage.tamper(page, with: storage.bytes(leaf))
        }
        let damaged = storage.snapshot
        let expected = switch damage {
        case .deleted: "index page \(FileRef(raw: parent)) is missing"
        case .truncated: "storage file \(page) is not a regular file of the storage size"
        default: "index page \(FileRef(raw: parent)) does not open"
        }
        for readOnly in [true, false] {
            do {
                _ = try TestVaults.open(storage, readOnly: readOnly, fanOut: Self.smallFanOut)
                Issue.record("\(damage), read-only \(readOnly): opened")
            } catch VaultError.damagedIndex(let message) {
                #expect(message == expected, "\(damage), read-only \(readOnly)")
            }
        }
        expectUnchanged(storage, since: damaged, "failed opens")
    }
}

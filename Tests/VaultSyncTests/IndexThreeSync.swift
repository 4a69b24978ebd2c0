import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// What the index-3 tests of a sync look at (docs/FORMAT.md §15.1, §15.7): whether a vault and
/// a remote root are index 3, and whether the derived records its pages hold are exactly those
/// of its tree.
enum IndexThreeSync {
    struct Entry: Hashable { let folder: UInt64, name: [UInt8], id: UInt64, type: ItemRecord.ItemType }

    static func isThree(_ device: SyncDevice) -> Bool { device.vault.state.withLock { $0.committer.indexThree != nil } }

    static func entryHashKey(_ device: SyncDevice) -> [UInt8]? {
        device.vault.state.withLock { $0.committer.indexThree?.entryHashKey.copyBytes() }
    }

    /// The committed state's records are the ones derived from its tree, and pass §15.6's check;
    /// the vault's check (fsck) is clean.
    static func expectExact(_ device: SyncDevice, _ context: String) throws {
        try device.vault.state.withLock { state in
            try state.loadWholeIndex()
            let three = try #require(state.committer.indexThree, "\(context): \(device.name) is index 3")
            // The bits against the pins themselves, not against the bits that stand for them.
            try state.readPinsIfUnread()
            let derived = try state.derivedRecords(entryHash: three.hash)
            try state.checkRecords(derived, entryHash: three.hash)
            #expect(derived == three.records, "\(context): \(device.name)'s pages hold the derived records")
        }
        let report = try device.vault.check()
        #expect(report.isClean, "\(context): \(device.name): \(report.storageProblems) \(report.damagedItems)")
    }

    /// The links of `items` as entries: what the entry records must hold.
    static func links(_ items: [UInt64: Item]) -> Set<Entry> {
        Set(items.flatMap { id, item in item.record.links.map { Entry(folder: $0.parentID, name: $0.name, id: id, type: item.record.type) } })
    }

    static func entries(_ records: IndexRecordsV3) -> Set<Entry> {
        Set(records.entries.flatMap { folder, hashes in
            hashes.values.flatMap(\.entries).map { Entry(folder: folder, name: $0.name, id: $0.itemID, type: $0.type) }
        })
    }

    /// The remote root as `device` reads it: of version 3, its entries and summaries exactly its
    /// items' links, its writer's member lists exactly its packs, and a bit set for every file of
    /// the writer its items use (a remote root may hold more, §15.4). Opens `device` again afterwards.
    static func expectRemoteExact(_ device: SyncDevice, _ remote: TestRemote, _ context: String) throws {
        let storage = try SyncDevice.remoteStorage(remote)
        let listed = Set(try storage.list().storageFiles)
        let vault = device.vault
        let remoteVault = try vault.openRemote(unlockFile: try storage.read(try vault.remoteUnlockName()))
        try vault.readRemoteRoot(remoteVault, slotFiles: try storage.read(remoteVault.rootSlotNames(), listed: listed))
        let root = try #require(remoteVault.root, "\(context): a remote root")
        #expect(root.envelopeVersion == IndexRootV3.envelopeVersion, "\(context): the remote root is of version 3")
        try vault.fetchRemotePages(remoteVault) { _ in Issue.record("\(context): a page of the remote root is not in the storage") }
        _ = try vault.loadRemoteTree(remoteVault)
        let contents = try #require(remoteVault.contents)
        let named = contents.items.filter { $0.key == Vault.rootID || !$0.value.record.links.isEmpty }
        #expect(entries(contents.derived) == links(named), "\(context): the remote's entries are its items' links")
        for (id, item) in named where item.isFolder {
            let inside = links(named).filter { $0.folder == id }
            #expect(contents.derived.summaries[id] == FolderSummary(entryCount: UInt64(inside.count),
                                                                     subfolderCount: UInt64(inside.filter { $0.type == .folder }.count)),
                    "\(context): folder \(id)'s summary on the remote")
        }
        #expect(Set(contents.derived.summaries.keys) == Set(named.filter { $0.value.isFolder }.keys))
        let writer = root.writerDevice
        var packs: [UInt64: [UInt64]] = [:], used = Set<UInt64>()
        for (id, item) in named {
            for raw in item.fileNumbers where FileRef(raw: raw).device == writer { used.insert(FileRef(raw: raw).number) }
            if let member = item.packedMember, FileRef(raw: member.fileNumber).device == writer {
                packs[FileRef(raw: member.fileNumber).number, default: []].append(id)
            }
        }
        #expect(contents.derived.lists.mapValues(\.itemIDs) == packs.mapValues { $0.sorted() }, "\(context): the remote's member lists")
        for number in used {
            let block = contents.derived.blocks[UInt32(number / IndexKeyV3.numbersPerBlock)]
            #expect(block?.isHeld(Int(number % IndexKeyV3.numbersPerBlock)) == true, "\(context): file \(number) used on the remote, bit clear")
        }
        try device.reopen()
    }

    /// A few random changes to `device`'s vault, each committed: files made and written again
    /// (now and then one of chunks), removed, renamed, folders made, among few names (the pair
    /// `24835`/`39342` among them) so that both devices meet the same names.
    static func randomChanges(_ device: SyncDevice, _ generator: inout TreeMergePropertyTests.Generator, step: Int) throws {
        let names = ["a", "b", "24835", "39342", "c"].map { Array($0.utf8) }
        let vault = device.vault
        for _ in 0..<3 {
            let folders = [Vault.rootID] + (try vault.contents(ofFolder: Vault.rootID)).map(\.id).filter { (try? vault.attributes($0).type) == .folder }
            let folder = folders.randomElement(using: &generator)!, name = names.randomElement(using: &generator)!
            let here = try? vault.lookup(folder, name)
            let isFile = here.map { (try? vault.attributes($0).type) == .file } ?? false
            switch Int.random(in: 0..<8, using: &generator) {
            case 0...2 where here == nil || isFile:
                let id = try here ?? vault.create(.file, in: folder, named: name, mode: 0o644)
                let size = Int.random(in: 0..<6, using: &generator) == 0 ? 300_000 : Int.random(in: 1..<3_000, using: &generator)
                try vault.truncate(id, size: 0)
                try vault.write(id, offset: 0, bytes: [UInt8]((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ step) }))
            case 3 where here == nil && folder == Vault.rootID && folders.count < 3:
                _ = try vault.create(.folder, in: folder, named: name, mode: 0o755)
            case 4 where isFile:
                try vault.remove(name, from: folder)
            case 5 where isFile:
                let target = folders.randomElement(using: &generator)!, newName = names.randomElement(using: &generator)!
                _ = try? vault.rename(name, in: folder, to: newName, in: target, replace: false)
            default: continue
            }
            try vault.commit()
            try expectExact(device, "\(device.name) step \(step)")
        }
    }
}

/// TreeMergePropertyTests' SplitMix64 for the standard library's random calls: a seed gives one run.
extension TreeMergePropertyTests.Generator: RandomNumberGenerator {}

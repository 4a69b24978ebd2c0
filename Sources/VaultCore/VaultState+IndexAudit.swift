import VaultCrypto
import VaultFormat

/// `fsck` of an index-3 vault (docs/FORMAT.md §15.6's last row, §15.7): the committed root read
/// again and its leaves one by one, each record handed to `IndexThreeAudit` and dropped; and the
/// repair, which brings back what nothing reaches and lets the next commit write every derived
/// record again from the item records.
extension VaultState {
    /// Findings of §15.6's whole-index rules, and the folders nothing reaches; nil for a vault
    /// that is not index 3 (or has no root yet).
    mutating func auditIndexThree() throws -> (findings: [String], unreachedFolders: [UInt64])? {
        guard let three = committer.indexThree, !committer.isNew else { return nil }
        // The bits are checked against the held set, pins included (an open may not have read them).
        try readPinsIfUnread()
        guard let root = try committedRoot() else {
            throw VaultError.damagedIndex("index 3: the root of generation \(committer.generation) no longer opens")
        }
        defer { root.wipeKeys() }
        let rootV3 = try IndexRootV3(root)
        var audit = IndexThreeAudit(numbers: IndexRecordsV3.Numbers(writer.allocator), entryHash: three.hash)
        for page in committer.pageTable.pages {
            guard let ref = page.ref, let key = ref.key else { throw VaultError.damagedIndex("index 3: a leaf of the root is not written") }
            let file = FileRef(raw: ref.fileNumber)
            guard let sealed = try storage.read(try secrets.fileName(ref.fileNumber)) else {
                throw VaultError.damagedIndex("index page \(file) is missing")
            }
            let body: [UInt8]
            do {
                body = try Sealer.openEnvelope(sealed, expectedNonce: nil, kind: .indexPage, version: IndexRootV3.envelopeVersion,
                                               key: .arena(key, session.arena), seal: .indexPageV2(level: 0))
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("index page \(file) does not open")
            }
            defer { body.wipeStorage() }
            guard case .leaf(let records) = try IndexPageV2.decode(body[...], level: 0) else {
                throw VaultError.damagedIndex("index page \(file) is not a leaf")
            }
            defer { for record in records { record.value.wipeStorage() } }
            for (recordKey, value) in records {
                let record = try IndexPageV3.decodeRecord(recordKey, value, root: rootV3, entryHash: three.hash)
                defer { Self.wipeKeys(of: record) }
                try audit.add(recordKey, record, page: file)
            }
        }
        let findings = audit.finish(rootHeld: rootHeldFiles.subtracting(indexFiles))
        return (findings, audit.unreached.filter(\.isFolder).map(\.id))
    }

    /// The root of the state's generation, read again from its slot (the page keys are in the
    /// arena already; the root gives the device table the records are checked against).
    private func committedRoot() throws -> IndexRootV2? {
        for slot in 0..<Format.indexSlotCount {
            let name = try FormatTwoKeys.slotName(rootLocator: secrets.locator, slot: UInt8(slot))
            guard let file = (try? storage.read(name)) ?? nil,
                  let root = try? Self.openRoot(file, slot: slot, rootKey: secrets.indexKey, readsIndexThree: true) else { continue }
            if root.generation == committer.generation { return root }
            root.wipeKeys()
        }
        return nil
    }

    private static func wipeKeys(of record: IndexPageV3.Record) {
        switch record {
        case .item(let item):
            item.itemKey.wipeStorage()
            if case .packed(let member) = item.layout { member.key.wipeStorage() }
        case .segment(let chunks):
            for chunk in chunks { if case .key(let key) = chunk.seal { key.wipeStorage() } }
        default: break
        }
    }

    /// `fsck --repair` of index 3, before its commit. Folders nothing reaches (a cycle of
    /// folders, each the other's parent) are moved into a folder "lost+found" of the root, made
    /// when missing, each under its item number, so that they and what they hold show again:
    /// nothing is dropped, and the user decides. Then the commit derives every record of §15.3–
    /// §15.4 from the item records and writes those that differ from the ones read (the root is
    /// written even when none does), in one root: a cut before it leaves the vault as it was.
    mutating func repairIndexThree(unreachedFolders: [UInt64]) throws {
        guard committer.indexThree != nil else { return }
        var lostAndFound: UInt64?
        for id in unreachedFolders.sorted() where !isReached(id) {
            guard let link = tree.items[id]?.record.links.first else { continue }
            let folder = try lostAndFound ?? lostAndFoundFolder()
            lostAndFound = folder
            var name = "\(id)"
            while tree.children[folder]?[Array(name.utf8)] != nil { name += "+" }
            try rename(link.parentID, link.name, to: folder, Array(name.utf8), replace: false)
        }
        committer.formatTwo?.rootDue = true
    }

    /// Whether the item's chain of first links leads to the root folder.
    func isReached(_ id: UInt64) -> Bool {
        var current = id, seen: Set<UInt64> = []
        while current != Format.rootItemID {
            guard seen.insert(current).inserted, let parent = tree.items[current]?.record.links.first?.parentID else { return false }
            current = parent
        }
        return true
    }

    /// "lost+found" in the root folder, made (mode 0700, the root folder's owner) when no item
    /// has that name; "lost+found+", … when a file has it.
    private mutating func lostAndFoundFolder() throws -> UInt64 {
        var name = "lost+found"
        while let id = tree.children[Format.rootItemID]?[Array(name.utf8)] {
            if tree.items[id]?.isFolder == true { return id }
            name += "+"
        }
        let root = try tree.item(Format.rootItemID).record
        return try create(.folder, in: Format.rootItemID, named: Array(name.utf8), mode: 0o700, uid: root.uid, gid: root.gid, rdev: 0, target: [])
    }
}

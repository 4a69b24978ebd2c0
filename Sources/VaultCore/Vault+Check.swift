import VaultCrypto
import VaultFormat
import VaultStore

/// What `Vault.check()` found (`dotsafe fsck`): items whose content does not open, and storage
/// files that break the invariants of docs/FORMAT.md §3.
public struct VaultCheckReport: Sendable {
    public struct DamagedItem: Sendable, Equatable {
        public var id: UInt64
        /// Folder/name of its first link, or "(unnamed item N)".
        public var path: String
        /// One line per damage: "chunk 3 of 7 does not open", "pack member does not open", …
        public var problems: [String]
        /// Chunk indexes (0-based) that cannot be read; for a packed file, [0].
        public var unreadableChunks: [Int]
    }

    public var damagedItems: [DamagedItem] = []
    /// Storage invariants broken: missing or malformed files of the vault, stray files, counts.
    public var storageProblems: [String] = []
    /// Owned files that are missing: a repair makes them again (random bytes, as free files).
    public var missingFileNumbers: [UInt64] = []
    /// Files named by this vault's key outside its groups: a repair removes them.
    public var strayFileNumbers: [UInt64] = []
    /// Files of this vault that a session cut short left, which the next writing open removes
    /// (`VaultState.removeLeftovers`): from the committed next file number up, and those of
    /// groups the committed root was releasing. Not damage.
    public var leftoverFileNumbers: [UInt64] = []
    /// Copies a re-creation at lock cut short left (`NAME.recreated`, FORMAT.md §11.3), of any
    /// vault: the next writing open removes them. Not damage.
    public var recreationLeftovers = 0
    /// Download folders a killed sync left (`NAME.downloading`, FORMAT.md §13.11), of any
    /// vault: the next writing open removes them. One a running sync holds is not counted.
    /// Not damage.
    public var downloadLeftovers = 0
    /// Index version 3: §15.6's rules across records that the index breaks, one line each
    /// ("index 3, RULE: …", numbers only), from `VaultState.auditIndexThree`.
    public var indexProblems: [String] = []
    /// Index version 3: folders nothing reaches from the root folder; a repair moves them into
    /// lost+found.
    public var unreachedFolders: [UInt64] = []
    public var items = 0
    public var chunksChecked = 0
    public var membersChecked = 0
    public var storageFiles = 0

    public var isClean: Bool { damagedItems.isEmpty && storageProblems.isEmpty && indexProblems.isEmpty }
}

extension Vault {
    /// Reads and opens every chunk and pack member of every item, and checks the storage files
    /// of the vault's groups. Writes nothing; decrypted bytes are dropped at once (no cache).
    /// `progress` is told (done, total) after each chunk or pack member.
    public func check(progress: ((Int, Int) -> Void)? = nil) throws -> VaultCheckReport {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            do {
                try state.loadWholeIndex()
                return try state.check(progress: progress)
            } catch { throw VaultError.wrap(error) }
        }
    }

    /// Drops what `report` found unreadable, after the caller has said so: an unreadable chunk
    /// becomes a hole (reads as zeros; the file keeps its size and its other chunks), an
    /// unreadable pack member leaves its file empty of stored data (zeros, size kept). Missing
    /// files of the vault's groups are made again and its stray files removed. Index 3 with
    /// `indexProblems`: the folders nothing reaches go into lost+found, and the commit writes
    /// the derived records again from the item records. Then commits.
    public func repair(_ report: VaultCheckReport) throws {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            guard !state.session.readOnly else { throw VaultError.readOnly }
            do {
                try state.loadWholeIndex()
                try state.repair(report)
            } catch { throw VaultError.wrap(error) }
        }
    }
}

extension VaultState {
    mutating func check(progress: ((Int, Int) -> Void)?) throws -> VaultCheckReport {
        var report = VaultCheckReport()
        let total = tree.allItems.values.reduce(0) { sum, item in
            guard item.isFile else { return sum }
            switch item.record.layout {
            case .empty: return sum
            case .packed: return sum + 1
            case .chunked: return sum + item.chunks.count
            }
        }
        progress?(0, total)
        let good = Set(try storage.listFiles())
        let all = Set(try storage.listAllNames())
        report.storageFiles = good.count
        report.items = tree.allItems.count
        if let audit = try auditIndexThree() { (report.indexProblems, report.unreachedFolders) = audit }
        for id in tree.allItems.keys.sorted() {
            guard let item = tree.items[id], item.isFile else { continue }
            var problems: [String] = []
            var unreadable: [Int] = []
            switch item.record.layout {
            case .empty: break
            case .packed(let member):
                report.membersChecked += 1
                progress?(report.chunksChecked + report.membersChecked, total)
                if let problem = try checkStored(id, 0, fileNumber: member.fileNumber, good: good, all: all, what: "pack") {
                    problems.append(problem == "does not open" ? "pack member does not open" : "pack file \(problem)")
                    unreadable.append(0)
                }
            case .chunked:
                let count = item.chunkCount
                for (index, ref) in item.chunks.sorted(by: { $0.key < $1.key }) {
                    report.chunksChecked += 1
                    progress?(report.chunksChecked + report.membersChecked, total)
                    if let problem = try checkStored(id, index, fileNumber: ref.fileNumber, good: good, all: all, what: "chunk") {
                        problems.append(problem == "does not open" ? "chunk \(index + 1) of \(count) does not open"
                                                                    : "chunk \(index + 1) of \(count): chunk file \(problem)")
                        unreadable.append(index)
                    }
                }
            }
            if !problems.isEmpty {
                report.damagedItems.append(.init(id: id, path: path(of: id), problems: problems, unreadableChunks: unreadable))
            }
        }
        try checkStorageFiles(&report, good: good, all: all)
        return report
    }

    /// nil when the chunk (or member) opens; else what is wrong with it.
    private mutating func checkStored(_ id: UInt64, _ index: Int, fileNumber: UInt64, good: Set<String>, all: Set<String>,
                                      what: String) throws -> String? {
        let name = try name(fileNumber)
        guard all.contains(name) else { return "missing" }
        guard good.contains(name) else { return "is not a regular file of the storage size" }
        do {
            _ = try loadChunk(id, index)
        } catch VaultError.damagedData {
            return "does not open"
        }
        return nil
    }

    /// §3: every file of the owned groups present and well-formed (covers among them), nothing of
    /// this vault beyond nextFileNumber or in groups it released, and a file count in steps of 16.
    private func checkStorageFiles(_ report: inout VaultCheckReport, good: Set<String>, all: Set<String>) throws {
        guard !isNew else { return }
        let group = UInt64(Format.groupSize)
        var owned = Set<String>()
        let allocator = writer.allocator
        if let warning = notices.rollbackWarning { report.storageProblems.append(warning) }
        // Format 2's unlock record is a numbered file with the pattern's name (§13.4).
        var special = specialFileNames
        // While a pattern change is in progress (a role-3 file listed, §13.12), the owner records
        // move between their pattern's names and their device names: either is the vault's file.
        if committer.formatTwo?.specialFiles.contains(where: { $0.role == .retiredOwner }) == true {
            for (number, listed) in special where !all.contains(listed) { special[number] = try name(number) }
        }
        // A free file missing while the count is whole was lent to a slot of a follow cut short
        // (FORMAT.md §14.8, "The file count of a follow"): no damage, nothing to make again.
        let lent = writer.lendsFreeFiles && good.count % Format.groupSize == 0 ? Set(allocator.freeNumbers + writer.absentFreeNumbers) : []
        for range in allocator.ownedGroups {
            for number in range.first * group..<range.end * group {
                let name = try special[number] ?? name(number)
                owned.insert(name)
                let kind = special[number] != nil ? "unlock record \(number)" : number < Format.indexSlotCount ? "index slot \(number)"
                    : allocator.coverNumbers.contains(number) ? "cover \(number)" : "file \(number)"
                if !all.contains(name) {
                    // A slot missing next to one that opens is the remains of a cut commit, not damage.
                    if number < Format.indexSlotCount && committer.missingSlot == number || lent.contains(number) { continue }
                    report.storageProblems.append("\(kind) of the vault is missing")
                    report.missingFileNumbers.append(number)
                } else if !good.contains(name) {
                    report.storageProblems.append("\(kind) of the vault is not a regular file of \(Format.fileSize) bytes")
                }
            }
        }
        // Numbers the vault handed out but no longer owns, then the ones beyond: none may exist.
        let scanEnd = allocator.nextFileNumber + UInt64(all.count) + group
        // Format 2: this device's numbers only (another device's files have names of its own).
        var number = allocator.base
        var strays: [UInt64] = []
        var leftovers: [UInt64] = []
        var leftoversCounted = 0
        while number < scanEnd {
            if allocator.owns(number) { number += 1; continue }
            let name = try name(number)
            if all.contains(name) {
                if number >= allocator.nextFileNumber || notices.releasedFilesLeft.contains(number) {
                    leftovers.append(number)
                    if good.contains(name) { leftoversCounted += 1 }
                } else {
                    strays.append(number)
                }
            }
            number += 1
        }
        for stray in strays { report.storageProblems.append("stray file \(stray) of the vault outside its groups") }
        report.strayFileNumbers = strays
        report.leftoverFileNumbers = leftovers
        report.recreationLeftovers = all.filter(StorageRecreator.isTemporary).count
        report.downloadLeftovers = try storage.downloadLeftovers()
        // Leftovers of a cut group or a release may break the steps of 16; their removal mends it.
        if (good.count - leftoversCounted) % Format.groupSize != 0 {
            report.storageProblems.append("the storage holds \(good.count - leftoversCounted) files, not a multiple of \(Format.groupSize)")
        }
    }

    /// The item's place for messages: folder/name of its first link, from the root folder.
    func path(of id: UInt64) -> String {
        var parts: [String] = []
        var current = id
        var seen: Set<UInt64> = []
        while current != Format.rootItemID {
            guard seen.insert(current).inserted, let link = tree.items[current]?.record.links.first else {
                return "(unnamed item \(id))"
            }
            parts.append(String(decoding: link.name, as: UTF8.self))
            current = link.parentID
        }
        return parts.isEmpty ? "/" : parts.reversed().joined(separator: "/")
    }

    mutating func repair(_ report: VaultCheckReport) throws {
        for number in report.missingFileNumbers {
            try storage.create(try name(number), contents: try session.random.bytes(Format.fileSize), durable: true)
        }
        for number in report.strayFileNumbers { try storage.remove(try name(number)) }
        if !report.missingFileNumbers.isEmpty || !report.strayFileNumbers.isEmpty { try storage.syncFolder() }
        for damaged in report.damagedItems {
            guard let item = tree.items[damaged.id] else { continue }
            if let member = item.packedMember {
                releaseMember(damaged.id, member)
                forgetMemberKey(damaged.id)
                tree.update(damaged.id) { $0.layout = .empty }
            } else {
                for index in damaged.unreadableChunks {
                    guard let ref = tree.setChunk(damaged.id, index, nil) else { continue }
                    release(ref)
                }
            }
            chunks.removeChunks(of: damaged.id, from: 0)
            tree.dirtyItems.insert(damaged.id)
        }
        if !report.indexProblems.isEmpty { try repairIndexThree(unreachedFolders: report.unreachedFolders) }
        try commit()
    }
}

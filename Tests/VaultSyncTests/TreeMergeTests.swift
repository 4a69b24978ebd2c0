import Testing
@testable import VaultSync

/// The merge rules of docs/SYNC-DESIGN.md, one scenario each.
@Suite struct TreeMergeTests {
    typealias F = MergeFixtures
    let report = F.file(10, "report.txt", content: 100)
    let docs = F.folder(20, "Documents")
    let a = F.folder(30, "A"), b = F.folder(31, "B")

    func checked(_ base: SyncTree?, _ local: SyncTree, _ remote: SyncTree) -> TreeMerge.Result {
        let result = F.merge(base, local, remote)
        #expect(result.tree.problems() == [], "the result is a tree")
        return result
    }

    @Test func unchangedAndOneSidedChangesAreTaken() {
        let base = F.tree(report, docs)
        #expect(checked(base, base, base).tree == base)
        let edited = F.tree(F.changed(report, by: 1, content: 101), docs)
        #expect(checked(base, edited, base).tree == edited)
        let moved = F.tree(F.changed(report, by: 2, parent: 20), docs)
        #expect(checked(base, base, moved).tree == moved)
        #expect(checked(base, base, moved).actions == [])
    }

    @Test func fileChangedOnBothSidesKeepsBoth() {
        let base = F.tree(report)
        let result = checked(base, F.tree(F.changed(report, by: 1, content: 101)), F.tree(F.changed(report, by: 2, content: 102)))
        let paths = F.paths(result.tree)
        #expect(paths["report.txt"]?.content == ContentReference(102), "the remote's version keeps the name")
        let copy = try! #require(paths["report.conflict-desk-\(F.stamp).txt"])
        #expect(copy.content == ContentReference(101) && copy.kind == .file && copy.changedBy == 1)
        #expect(result.actions == [.keptBothVersions(id: 10, copy: copy.id)])
        #expect(paths.count == 2)
    }

    @Test func sameChangeOnBothSidesIsNoConflict() {
        let base = F.tree(report)
        let same = F.tree(F.changed(report, by: 1, content: 105))
        var theirs = F.changed(report, by: 2, content: 105)
        theirs.version = 7
        let result = checked(base, same, F.tree(theirs))
        #expect(result.tree.items.count == 2 && result.actions == [])
        #expect(result.tree[10]?.version == 7, "the remote's record, version included")
    }

    @Test func deleteAgainstEditKeepsTheEdit() {
        let base = F.tree(report)
        let edited = F.tree(F.changed(report, by: 2, content: 102))
        let here = checked(base, F.tree(), edited)
        #expect(here.tree == edited && here.actions == [.keptEditOverDelete(id: 10, deletedOn: .local)])
        let there = checked(base, F.tree(F.changed(report, by: 1, name: "renamed.txt")), F.tree())
        #expect(F.paths(there.tree)["renamed.txt"]?.id == 10, "a rename is an edit too")
        #expect(there.actions == [.keptEditOverDelete(id: 10, deletedOn: .remote)])
        #expect(checked(base, F.tree(), base).tree == F.tree(), "a delete against no change deletes")
    }

    @Test func deletedFolderComesBackForWhatItHolds() {
        let inside = F.file(21, in: 20, "plan.txt", content: 200)
        let base = F.tree(docs, inside)
        let added = F.file(40, in: 20, "new.txt", content: 400, by: 2)
        let result = checked(base, F.tree(), F.tree(docs, inside, added))
        #expect(Set(F.paths(result.tree).keys) == ["Documents", "Documents/new.txt"], "plan.txt was deleted unchanged")
        #expect(result.actions == [.restoredFolder(id: 20, deletedOn: .local)])
    }

    @Test func renameHereAndMoveThereMerge() {
        let base = F.tree(report, docs)
        let result = checked(base, F.tree(F.changed(report, by: 1, name: "final.txt"), docs),
                             F.tree(F.changed(report, by: 2, parent: 20), docs))
        let item = try! #require(F.paths(result.tree)["Documents/final.txt"])
        #expect(item.id == 10 && item.version == 3 && item.changedBy == 1, "a record made of both sides is a new version")
        #expect(result.actions == [])
    }

    @Test func renameRenameKeepsTheRemoteName() {
        let base = F.tree(report)
        let result = checked(base, F.tree(F.changed(report, by: 1, name: "mine.txt")), F.tree(F.changed(report, by: 2, name: "theirs.txt")))
        #expect(Set(F.paths(result.tree).keys) == ["theirs.txt"])
        #expect(result.actions == [.keptRemotePlace(id: 10)])
    }

    @Test func crossedMovesDoNotMakeACycle() {
        let x = F.file(32, in: 30, "x", content: 320), y = F.file(33, in: 31, "y", content: 330)
        let base = F.tree(a, b, x, y)
        let result = checked(base, F.tree(F.changed(a, by: 1, parent: 31), b, x, y), F.tree(a, F.changed(b, by: 2, parent: 30), x, y))
        #expect(result.tree.items.count == 5, "nothing lost")
        #expect(Set(F.paths(result.tree).keys) == ["A", "A/B", "A/x", "A/B/y"], "the remote's move stands")
        #expect(result.actions == [.undidMove(id: 30)])
    }

    @Test func foldersMadeOnBothSidesMerge() {
        let mine = F.folder(50, "Photos", by: 1), theirs = F.folder(60, "Photos", by: 2)
        let result = checked(F.tree(), F.tree(mine, F.file(51, in: 50, "a.jpg")), F.tree(theirs, F.file(61, in: 60, "b.jpg")))
        #expect(Set(F.paths(result.tree).keys) == ["Photos", "Photos/a.jpg", "Photos/b.jpg"])
        #expect(result.actions == [.mergedFolders(absorbed: 50, into: 60)])
    }

    @Test func twoLineagesMergeIntoOne() {
        let local = SyncTree([F.root(content: 7), F.folder(0x1_0000_0001, "Documents", by: 1),
                              F.file(0x1_0000_0002, in: 0x1_0000_0001, "a.txt", content: 1, by: 1),
                              F.file(0x1_0000_0003, "todo.txt", content: 2, by: 1)])
        let remote = SyncTree([F.root(content: 8), F.folder(0x2_0000_0001, "Documents", by: 2),
                               F.file(0x2_0000_0002, in: 0x2_0000_0001, "b.txt", content: 3, by: 2),
                               F.file(0x2_0000_0003, "todo.txt", content: 4, by: 2),
                               F.file(0x2_0000_0004, "same.txt", content: 5, by: 2)])
        let local2 = SyncTree(Array(local.items.values) + [F.file(0x1_0000_0004, "same.txt", content: 5, by: 1)])
        let result = checked(nil, local2, remote)
        let paths = F.paths(result.tree)
        #expect(Set(paths.keys) == ["Documents", "Documents/a.txt", "Documents/b.txt", "todo.txt",
                                    "todo.conflict-desk-\(F.stamp).txt", "same.txt"])
        #expect(paths["todo.txt"]?.content == ContentReference(4))
        #expect(paths["same.txt"]?.id == 0x2_0000_0004)
        #expect(result.tree[SyncTree.rootID]?.content == ContentReference(8))
        #expect(result.actions.contains(.droppedDuplicate(id: 0x1_0000_0004, of: 0x2_0000_0004)))
        #expect(result.actions.contains(.keptRemoteAttributes(id: SyncTree.rootID)))
    }

    @Test func collidingIDsGetANewIDOnTheJoiningSide() {
        // Both devices made item 77, a folder here, a file there.
        let mine = F.folder(77, "Music", by: 1), inMine = F.file(78, in: 77, "song.ogg", content: 780, by: 1)
        let theirs = F.file(77, "notes.md", content: 770, by: 2)
        let result = checked(F.tree(), F.tree(mine, inMine), F.tree(theirs))
        let paths = F.paths(result.tree)
        #expect(paths["notes.md"]?.id == 77)
        let moved = try! #require(paths["Music"])
        #expect(moved.id == 1_000 && paths["Music/song.ogg"]?.id == 78)
        #expect(result.actions == [.reassignedID(from: 77, to: 1_000)])
        #expect(result.nextItemID == 1_001)
    }

    @Test func aNameTakenOnTheOtherSideGetsAConflictName() {
        let base = F.tree(report)
        let result = checked(base, F.tree(F.changed(report, by: 1, name: "new.txt")), F.tree(report, F.file(11, "new.txt", content: 110, by: 2)))
        let paths = F.paths(result.tree)
        #expect(paths["new.txt"]?.id == 11, "the remote's item keeps the name")
        #expect(paths["new.conflict-desk-\(F.stamp).txt"]?.id == 10)
        #expect(result.actions == [.renamed(id: 10, to: "new.conflict-desk-\(F.stamp).txt")])
    }

    @Test func folderAttributesChangedOnBothSidesKeepTheRemotes() {
        let base = F.tree(docs)
        let result = checked(base, F.tree(F.changed(docs, by: 1, content: 201)), F.tree(F.changed(docs, by: 2, content: 202)))
        #expect(result.tree[20]?.content == ContentReference(202))
        #expect(result.actions == [.keptRemoteAttributes(id: 20)])
    }

    @Test func conflictNames() {
        #expect(ConflictName.make("archive.tar.gz", device: "desk", time: 0) == "archive.tar.conflict-desk-19700101T000000.gz")
        #expect(ConflictName.make(".bashrc", device: "desk", time: 0) == ".bashrc.conflict-desk-19700101T000000")
        #expect(ConflictName.make("Makefile", device: "a/b", time: 0, number: 2) == "Makefile.conflict-a_b-19700101T000000-2")
        #expect(ConflictName.make("photos.2024", device: "desk", time: 0, hasExtension: false)
                == "photos.2024.conflict-desk-19700101T000000")
        let long = String(repeating: "x", count: 250) + ".pdf"
        let made = ConflictName.make(long, device: "desk", time: 0)
        #expect(made.utf8.count == 255 && made.hasSuffix(".conflict-desk-19700101T000000.pdf"))
        for (time, text) in [(Int64(0), "19700101T000000"), (951_782_400, "20000229T000000"), (1_795_000_000, "20261118T110640"),
                             (4_102_444_799, "20991231T235959"), (-1, "19691231T235959")] {
            #expect(ConflictName.timestamp(time) == text)
        }
    }
}

import Testing
@testable import VaultSync

/// The owner's merge after a withdrawal (FORMAT.md §14.8): what the withdrawn person's device
/// (3, "bob") changed on the remote since the base stays out, what the owner's other device
/// (2, "laptop") changed comes in, and the remote's tree handed to the merge stays a tree.
@Suite struct WithdrawnChangesTests {
    typealias F = MergeFixtures
    let bob: Set<UInt16> = [3]
    let keep = F.file(10, "keep.txt", content: 100)
    let edit = F.file(11, "edit.txt", content: 110)
    let gone = F.file(12, "gone.txt", content: 120)
    let docs = F.folder(20, "Documents")

    func merged(_ base: SyncTree, _ local: SyncTree, _ remote: SyncTree) -> SyncTree {
        let without = WithdrawnChanges.removed(from: remote, base: base, devices: bob, local: local)
        #expect(without.problems() == [], "the remote without bob's changes is a tree")
        let result = F.merge(base, local, without)
        #expect(result.tree.problems() == [])
        return result.tree
    }

    @Test func theirEditsRenamesNewItemsAndDeletesStayOut() {
        let base = F.tree(keep, edit, gone, docs)
        let remote = F.tree(keep, F.changed(edit, by: 3, content: 111), F.changed(docs, by: 3, name: "Bobs"),
                            F.file(30, in: 31, "inside.txt", by: 3), F.folder(31, "bob-folder", by: 3), F.file(32, "new.txt", by: 3))
        #expect(merged(base, base, remote) == base)
    }

    @Test func theOwnersOtherDeviceStillComesIn() {
        let base = F.tree(keep, edit, gone, docs)
        let laptopEdit = F.changed(keep, by: 2, content: 101), laptopNew = F.file(40, in: 20, "laptop.txt", by: 2)
        // Bob's sync took the laptop's changes in and wrote its own over them.
        let remote = F.tree(laptopEdit, laptopNew, F.changed(edit, by: 3, content: 111), docs, F.file(32, "new.txt", by: 3))
        #expect(merged(base, base, remote) == F.tree(laptopEdit, laptopNew, edit, gone, docs))
    }

    @Test func theLocalSideChangesStillWin() {
        let base = F.tree(keep, edit, gone)
        let local = F.tree(F.changed(keep, by: 1, content: 102), edit)
        let remote = F.tree(F.changed(keep, by: 3, content: 103), edit)
        #expect(merged(base, local, remote) == local, "gone.txt deleted here stays deleted; keep.txt is this side's")
    }

    /// A folder bob made that holds the laptop's file stays (the file keeps its place); bob's
    /// move of a folder that the laptop then put its parent into is undone only where no cycle
    /// follows.
    @Test func whatKeepsItATreeStays() {
        let a = F.folder(50, "A"), b = F.folder(51, in: 50, "B")
        let base = F.tree(a, b)
        let bobsFolder = F.folder(60, "from-bob", by: 3), laptopFile = F.file(61, in: 60, "laptop.txt", by: 2)
        let remote = F.tree(F.changed(a, by: 2, parent: 51), F.changed(b, by: 3, parent: SyncTree.rootID), bobsFolder, laptopFile)
        let without = WithdrawnChanges.removed(from: remote, base: base, devices: bob, local: base)
        #expect(without.problems() == [])
        #expect(without[60] == bobsFolder && without[61] == laptopFile)
        #expect(without[51]?.parent == SyncTree.rootID, "B under A under B would be a cycle: the remote's place")
    }

    func leftOut(_ remote: SyncTree, base: SyncTree, local: SyncTree, devices: Set<UInt16>? = nil) -> Set<UInt64> {
        WithdrawnChanges.leftOut(from: remote, base: base, devices: devices ?? bob, local: local, context: F.context)
    }

    /// A mount's round fetches no file of what stays out (SYNC-DESIGN §3.6 step 2): the items
    /// whose content the merge does not take.
    @Test func leftOutAreTheItemsWhoseContentStaysOut() {
        let base = F.tree(keep, edit, gone, docs)
        let remote = F.tree(keep, F.changed(edit, by: 3, content: 111), F.changed(docs, by: 3, name: "Bobs"),
                            F.file(30, in: 31, "inside.txt", by: 3), F.folder(31, "bob-folder", by: 3), F.file(32, "new.txt", by: 3))
        #expect(leftOut(remote, base: base, local: base) == [11, 30, 31, 32])
        #expect(leftOut(remote, base: base, local: base, devices: []) == [])
        // Bob's folder holding the laptop's file stays, so its content is fetched.
        let bobsFolder = F.folder(60, "from-bob", by: 3), laptopFile = F.file(61, in: 60, "laptop.txt", by: 2)
        #expect(leftOut(F.tree(keep, bobsFolder, laptopFile), base: base, local: base) == [])
    }

    /// Bob edited and moved a file out of a folder the laptop deleted: put back under that
    /// folder only when this side still has it, else it stays as the remote has it, and its
    /// content comes in (the local tree decides).
    @Test func leftOutReadsTheLocalTree() {
        let folder = F.folder(70, "D"), file = F.file(71, in: 70, "x.txt")
        let base = F.tree(folder, file)
        let remote = F.tree(F.changed(file, by: 3, parent: SyncTree.rootID, content: 711))
        #expect(leftOut(remote, base: base, local: base) == [71])
        #expect(leftOut(remote, base: base, local: F.tree()) == [])
    }

    /// A round cut after its commit and before its root went up, run again: its base is the
    /// tree it read, Bob's changes in it, which this side's merged tree does not hold. What
    /// Bob wrote still stays out, though the remote did not change it since that base.
    @Test func leftOutAfterARoundCutBeforeItsRoot() {
        let read = F.tree(keep, F.changed(edit, by: 3, content: 111), F.file(32, "new.txt", by: 3), F.folder(31, "bob-folder", by: 3))
        let local = F.tree(keep, edit, gone)
        #expect(leftOut(read, base: read, local: local) == [11, 31, 32])
    }

    /// What the merge takes of the remote is never left out: a file deleted here and renamed by
    /// the laptop comes back (an edit over a delete) with the remote's payload, which the remote
    /// did not change since the base; so does a folder deleted here that the laptop wrote into.
    @Test func leftOutHoldsNothingTheMergeTakes() {
        let base = F.tree(keep, edit, docs)
        let remote = F.tree(keep, F.changed(edit, by: 2, name: "renamed.txt"), docs, F.file(40, in: 20, "laptop.txt", by: 2))
        let local = F.tree(keep)
        #expect(leftOut(remote, base: base, local: local) == [])
        let merged = WithdrawnChanges.merge(base: base, local: local, remote: remote, devices: bob, context: F.context).tree
        #expect(merged[11]?.name == "renamed.txt" && merged[20] != nil && merged[40] != nil)
    }

    @Test func nothingWithdrawnIsTheRemoteAsItIs() {
        let base = F.tree(keep, gone)
        let remote = F.tree(F.changed(keep, by: 3, content: 101))
        #expect(WithdrawnChanges.removed(from: remote, base: base, devices: [], local: base) == remote)
        #expect(WithdrawnChanges.removed(from: remote, base: nil, devices: bob, local: base) == remote)
    }
}

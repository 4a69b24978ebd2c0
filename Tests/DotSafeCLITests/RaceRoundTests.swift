import Testing

/// `RaceRound` lets `SyncRaceTests` pass the race of SYNC-DESIGN §3.4 step 7 only as the design
/// allows it: each outcome here that loses or changes something more is refused.
@Suite struct RaceRoundTests {
    static let round = RaceRound(before: ["shared.txt": "edited by the desktop", "a.txt": "a"],
                                 added: ["laptop.txt": "from the laptop", "desktop.txt": "from the desktop"],
                                 shared: "shared.txt", edit: "edited by the laptop",
                                 authors: ["edited by the desktop": "desktop", "edited by the laptop": "laptop"], warnings: 1)
    static let expected = ["shared.txt": "edited by the laptop", "a.txt": "a", "laptop.txt": "from the laptop", "desktop.txt": "from the desktop"]
    /// The full run's outcome: the desktop merged without a base, its version became the copy.
    static let desktopCopy = expected.merging(["shared.conflict-desktop-20261206T173058.txt": "edited by the desktop"]) { $1 }

    static func both(_ files: [String: String]) -> [String: [String: String]] { ["laptop": files, "desktop": files] }

    @Test func theAllowedOutcomesPass() {
        #expect(Self.round.problems(Self.both(Self.expected)).isEmpty)
        #expect(Self.round.problems(Self.both(Self.desktopCopy)).isEmpty)
        // The laptop merged without a base: its edit is the copy, the name holds the desktop's.
        var laptopCopy = Self.expected
        laptopCopy["shared.txt"] = "edited by the desktop"
        laptopCopy["shared.conflict-laptop-20261206T173058-2.txt"] = "edited by the laptop"
        #expect(Self.round.problems(Self.both(laptopCopy)).isEmpty)
    }

    @Test func aCopyWithoutTheWarningIsRefused() {
        var silent = Self.round
        silent.warnings = 0
        #expect(silent.problems(Self.both(Self.desktopCopy))
                == ["1 conflict copies, 0 syncs that merged without a base (said the warning)"])
    }

    @Test func aLostChangeIsRefused() {
        var lostEdit = Self.expected
        lostEdit["shared.txt"] = "edited by the desktop"
        #expect(Self.round.problems(Self.both(lostEdit)) == ["shared.txt holds \"edited by the desktop\", not the round's edit \"edited by the laptop\""])
        var lostFile = Self.desktopCopy
        lostFile["desktop.txt"] = nil
        #expect(Self.round.problems(Self.both(lostFile)) == ["desktop.txt holds nothing, not \"from the desktop\""])
        // Both texts in copies, but the edit's gone from the name and no copy holds it.
        var twoOld = Self.desktopCopy
        twoOld["shared.txt"] = "edited by the desktop"
        #expect(Self.round.problems(Self.both(twoOld))
                == ["shared.txt and its copies hold [\"edited by the desktop\"], not both of [\"edited by the desktop\", \"edited by the laptop\"]"])
    }

    @Test func anythingElseIsRefused() {
        var wrongName = Self.expected
        wrongName["shared.conflict-laptop-20261206T173058.txt"] = "edited by the desktop"
        #expect(Self.round.problems(Self.both(wrongName))
                == ["shared.conflict-laptop-20261206T173058.txt (\"edited by the desktop\") is no conflict copy of shared.txt named for the device that wrote its text"])
        var otherFile = Self.expected
        otherFile["a.conflict-desktop-20261206T173058.txt"] = "a"
        #expect(Self.round.problems(Self.both(otherFile)).count == 1)
        var changed = Self.expected
        changed["a.txt"] = "b"
        #expect(Self.round.problems(Self.both(changed)) == ["a.txt holds \"b\", not \"a\""])
        #expect(Self.round.problems(["laptop": Self.expected, "desktop": Self.desktopCopy]).count == 1)
    }
}

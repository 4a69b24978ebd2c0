import Testing
import VaultCore

/// R-PAT-1..3: parsing, the exact message for each refusal, hints, canonical notation, counts.
@Suite struct PatternTests {
    struct Refusal: Sendable, CustomStringConvertible {
        var input: String
        var error: PatternError
        var message: String
        var description: String { "'\(input)'" }
    }

    static let refusals: [Refusal] = [
        Refusal(input: "", error: .empty, message: "the pattern is empty: write points like b2-c2-d3-d4"),
        Refusal(input: " - ,", error: .empty, message: "the pattern is empty: write points like b2-c2-d3-d4"),
        Refusal(input: "a1-d4-e5-e4", error: .notNext("d4", "a1"), message: "d4 is not next to a1"),
        Refusal(input: "b2-c3-c4-b4-a5-a3", error: .notNext("a3", "a5"), message: "a3 is not next to a5"),
        Refusal(input: "b2-c2-d3-c2", error: .usedTwice("c2"), message: "c2 is used twice"),
        Refusal(input: "b2-c2-b2-b3", error: .usedTwice("b2"), message: "b2 is used twice"),
        Refusal(input: "e5-f6-e4-d4", error: .outsideGrid("f6"), message: "f6 is not a point of the 5×5 grid"),
        Refusal(input: "a0-a1-a2-a3", error: .outsideGrid("a0"), message: "a0 is not a point of the 5×5 grid"),
        Refusal(input: "a1-a2-a3-a4-a5-a6", error: .outsideGrid("a6"), message: "a6 is not a point of the 5×5 grid"),
        Refusal(input: "b2-xx-c3-c4", error: .notAPoint("xx"), message: "'xx' is not a point: write a column a-e and a row 1-5, like b2"),
        Refusal(input: "b2-c22-c3", error: .notAPoint("c22"), message: "'c22' is not a point: write a column a-e and a row 1-5, like b2"),
        Refusal(input: "b2c2d3d4", error: .notAPoint("b2c2d3d4"), message: "'b2c2d3d4' is not a point: write a column a-e and a row 1-5, like b2"),
        Refusal(input: "2b-c2-d3-d4", error: .notAPoint("2b"), message: "'2b' is not a point: write a column a-e and a row 1-5, like b2"),
        Refusal(input: "b2-c2-d3", error: .tooShort(3), message: "a pattern needs at least 4 points, this one has 3"),
        Refusal(input: "c3", error: .tooShort(1), message: "a pattern needs at least 4 points, this one has 1"),
    ]

    @Test(arguments: refusals)
    func refusalNamesThePoint(_ refusal: Refusal) {
        let error = #expect(throws: PatternError.self) { try Pattern(parsing: refusal.input) }
        #expect(error == refusal.error)
        #expect(error?.description == refusal.message)
    }

    static let short = "a pattern of 4 points is easy to guess: use 6 or more"
    static let corner = "many patterns start in a corner: start somewhere else"
    static let line = "a straight line is among the first patterns anyone tries"

    @Test(arguments: [
        ("b2-c2-d3-d4-c4-b4-a5", [String]()),
        ("b2-c2-d3-d4", [short]),
        ("b2-c2-d3-d4-c4", ["a pattern of 5 points is easy to guess: use 6 or more"]),
        ("a1-a2-b3-c3-d4-e5", [corner]),
        ("e5-d5-c4-c3-c2-d1", [corner]),
        ("e1-d2-c3-c4-c5-b5", [corner]),
        ("a5-b4-c3-c2-d1-e1", [corner]),
        ("b1-b2-b3-b4", [short, line]),
        ("c5-c4-c3-c2-c1", ["a pattern of 5 points is easy to guess: use 6 or more", line]),
        ("a1-b2-c3-d4", [short, corner, line]),
        ("e1-d1-c1-b1-a1", ["a pattern of 5 points is easy to guess: use 6 or more", corner, line]),
    ])
    func hints(_ input: String, _ expected: [String]) throws {
        #expect(try Pattern(parsing: input).hints == expected)
    }

    @Test(arguments: [
        ("b2-c2-d3-d4-c4-b4-a5", "b2-c2-d3-d4-c4-b4-a5"),
        ("B2-C2-D3-D4-C4-B4-A5", "b2-c2-d3-d4-c4-b4-a5"),
        ("b2 c2 d3 d4 c4 b4 a5", "b2-c2-d3-d4-c4-b4-a5"),
        ("  B2 - c2 -D3  d4,C4,b4\ta5 ", "b2-c2-d3-d4-c4-b4-a5"),
        ("e5,d4,c3,b2", "e5-d4-c3-b2"),
    ])
    func canonicalNotation(_ input: String, _ canonical: String) throws {
        let pattern = try Pattern(parsing: input)
        #expect(pattern.canonical == canonical)
        #expect(pattern.canonicalBytes == Array(canonical.utf8))
        #expect(try Pattern(parsing: canonical) == pattern)
    }

    @Test func pointsAreColumnLetterAndRowDigit() throws {
        let pattern = try Pattern(parsing: "a1-b2-c3-d4-e5")
        #expect(pattern.points.map(\.column) == [0, 1, 2, 3, 4])
        #expect(pattern.points.map(\.row) == [0, 1, 2, 3, 4])
        #expect(try Pattern(parsing: "e1-d2-c3-b4").points.first == Pattern.Point(column: 4, row: 0))
    }

    /// Counted independently by tools/vectors/make-vectors.py (--counts).
    @Test(arguments: [(3, 0), (4, 3768), (5, 21048), (6, 95120)])
    func countOfShortPatterns(length: Int, expected: Int) {
        #expect(Pattern.count(ofLengthAtMost: length) == expected)
    }
}

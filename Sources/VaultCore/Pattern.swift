/// An unlock pattern on the 5×5 grid (R-PAT-1..3). Columns `a`–`e` left to right, rows `1`–`5`
/// top to bottom; canonical notation joins points with `-`: `b2-c2-d3-d4-c4-b4-a5`.
public struct Pattern: Equatable, Sendable {
    public struct Point: Hashable, Sendable, CustomStringConvertible {
        public let column: Int
        public let row: Int
        public init(column: Int, row: Int) { self.column = column; self.row = row }
        public var description: String { "\(Character(UnicodeScalar(UInt8(97 + column))))\(row + 1)" }
        func isNext(to other: Point) -> Bool {
            self != other && abs(column - other.column) <= 1 && abs(row - other.row) <= 1
        }
    }

    public static let gridSize = 5
    public static let minimumPoints = 4
    /// Patterns shorter than this get a hint (R-PAT-3).
    public static let recommendedPoints = 6

    public let points: [Point]

    /// Parses and validates. Accepts upper case and spaces or commas as separators too; every
    /// violation names the point (R-PAT-2).
    public init(parsing text: String) throws(PatternError) {
        let tokens = text.lowercased().split { $0 == "-" || $0 == " " || $0 == "," || $0 == "\t" }
        guard !tokens.isEmpty else { throw .empty }
        var points: [Point] = []
        for token in tokens {
            let point = try Self.point(String(token))
            if points.contains(point) { throw .usedTwice(point.description) }
            if let previous = points.last, !point.isNext(to: previous) {
                throw .notNext(point.description, previous.description)
            }
            points.append(point)
        }
        guard points.count >= Self.minimumPoints else { throw .tooShort(points.count) }
        self.points = points
    }

    private static func point(_ token: String) throws(PatternError) -> Point {
        let scalars = Array(token.unicodeScalars)
        guard scalars.count == 2, ("a"..."z").contains(scalars[0]), ("0"..."9").contains(scalars[1]) else {
            throw .notAPoint(token)
        }
        let column = Int(scalars[0].value) - 97, row = Int(scalars[1].value) - 49
        guard (0..<gridSize).contains(column), (0..<gridSize).contains(row) else { throw .outsideGrid(token) }
        return Point(column: column, row: row)
    }

    public var canonical: String { points.map(\.description).joined(separator: "-") }
    /// The bytes fed to PBKDF2 (docs/FORMAT.md §2.1).
    public var canonicalBytes: [UInt8] { Array(canonical.utf8) }

    /// Advice for a weak pattern; never a refusal (R-PAT-3).
    public var hints: [String] {
        var hints: [String] = []
        if points.count < Self.recommendedPoints {
            hints.append("a pattern of \(points.count) points is easy to guess: use \(Self.recommendedPoints) or more")
        }
        let corners = [0, Self.gridSize - 1]
        if let first = points.first, corners.contains(first.column), corners.contains(first.row) {
            hints.append("many patterns start in a corner: start somewhere else")
        }
        if isStraightLine { hints.append("a straight line is among the first patterns anyone tries") }
        return hints
    }

    private var isStraightLine: Bool {
        let steps = zip(points, points.dropFirst()).map { ($1.column - $0.column, $1.row - $0.row) }
        return steps.allSatisfy { $0 == steps[0] }
    }

    /// How many valid patterns have at most `length` points: the guessing effort of a short pattern.
    public static func count(ofLengthAtMost length: Int) -> Int {
        var total = 0
        var used = [Bool](repeating: false, count: gridSize * gridSize)
        func extend(_ column: Int, _ row: Int, _ count: Int) {
            if count >= minimumPoints { total += 1 }
            guard count < length else { return }
            for dc in -1...1 { for dr in -1...1 where dc != 0 || dr != 0 {
                let c = column + dc, r = row + dr
                guard (0..<gridSize).contains(c), (0..<gridSize).contains(r), !used[r * gridSize + c] else { continue }
                used[r * gridSize + c] = true
                extend(c, r, count + 1)
                used[r * gridSize + c] = false
            } }
        }
        for start in 0..<(gridSize * gridSize) {
            used[start] = true
            extend(start % gridSize, start / gridSize, 1)
            used[start] = false
        }
        return total
    }
}

/// Why a pattern was refused; the description is the one-line message users see.
public enum PatternError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case notAPoint(String)
    case outsideGrid(String)
    case usedTwice(String)
    case notNext(String, String)
    case tooShort(Int)

    public var description: String {
        switch self {
        case .empty: "the pattern is empty: write points like b2-c2-d3-d4"
        case .notAPoint(let token): "'\(token)' is not a point: write a column a-e and a row 1-5, like b2"
        case .outsideGrid(let token): "\(token) is not a point of the 5×5 grid"
        case .usedTwice(let point): "\(point) is used twice"
        case .notNext(let point, let previous): "\(point) is not next to \(previous)"
        case .tooShort(let count): "a pattern needs at least \(Pattern.minimumPoints) points, this one has \(count)"
        }
    }
}

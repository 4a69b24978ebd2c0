import VaultCrypto

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

    /// The canonical bytes fed to PBKDF2 (docs/FORMAT.md §2.1), in locked memory that is zeroed
    /// when the last copy of this pattern goes. The pattern exists nowhere else: it is parsed
    /// from bytes straight into here, never through a `String` (STYLE.md).
    let secret: SecretBytes
    public let pointCount: Int
    /// Advice for a weak pattern; never a refusal (R-PAT-3).
    public let hints: [String]

    /// Parses text: for tests, vectors and the fuzzer. A pattern a person typed goes through
    /// `init(parsing:)` with bytes.
    public init(parsing text: String) throws(PatternError) {
        var bytes = Array(text.utf8)
        defer { bytes.wipe() }
        try self.init(parsing: bytes)
    }

    public init(parsing bytes: [UInt8]) throws(PatternError) {
        let parsed = bytes.withUnsafeBytes { raw in Result { () throws(PatternError) in try Pattern(parsing: raw) } }
        self = try parsed.get()
    }

    /// Parses and validates. Accepts upper case and spaces or commas as separators too; every
    /// violation names the point (R-PAT-2). The caller wipes `bytes`.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PatternError) {
        // Grid positions (row * 5 + column) in order, on the stack, zeroed before returning.
        var order = (0..<(Self.gridSize * Self.gridSize)).map { _ in UInt8(0) }
        defer { order.wipe() }
        var count = 0, used: UInt32 = 0
        var firstStep: (Int, Int)?, isLine = true
        var index = 0
        while index < bytes.count {
            guard !Self.isSeparator(bytes[index]) else { index += 1; continue }
            var end = index
            while end < bytes.count && !Self.isSeparator(bytes[end]) { end += 1 }
            let token = UnsafeRawBufferPointer(rebasing: bytes[index..<end])
            let point = try Self.point(token)
            let position = point.row * Self.gridSize + point.column
            if used & (1 << position) != 0 { throw .usedTwice(point.description) }
            if count > 0 {
                let previous = Point(column: Int(order[count - 1]) % Self.gridSize, row: Int(order[count - 1]) / Self.gridSize)
                if !point.isNext(to: previous) { throw .notNext(point.description, previous.description) }
                let step = (point.column - previous.column, point.row - previous.row)
                if let firstStep { isLine = isLine && firstStep == step } else { firstStep = step }
            }
            used |= 1 << position
            order[count] = UInt8(position)
            count += 1
            index = end
        }
        guard count > 0 else { throw .empty }
        guard count >= Self.minimumPoints else { throw .tooShort(count) }
        do { secret = try SecretBytes(count: 3 * count - 1) } catch { throw .noLockedMemory }
        secret.withUnsafeMutableBytes { canonical in
            for i in 0..<count {
                canonical[3 * i] = 0x61 + order[i] % UInt8(Self.gridSize)
                canonical[3 * i + 1] = 0x31 + order[i] / UInt8(Self.gridSize)
                if i + 1 < count { canonical[3 * i + 2] = 0x2d }
            }
        }
        pointCount = count
        let first = Point(column: Int(order[0]) % Self.gridSize, row: Int(order[0]) / Self.gridSize)
        hints = Self.hints(count: count, first: first, isLine: isLine)
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == 0x2d || byte == 0x20 || byte == 0x2c || byte == 0x09
    }

    private static func point(_ token: UnsafeRawBufferPointer) throws(PatternError) -> Point {
        // A copy of one point of the pattern: zeroed before it goes. The text of a token
        // exists only for the message that refuses it.
        var lower = token.map { (0x41...0x5a).contains($0) ? $0 | 0x20 : $0 }
        defer { lower.wipe() }
        guard lower.count == 2, (0x61...0x7a).contains(lower[0]), (0x30...0x39).contains(lower[1]) else {
            throw .notAPoint(String(decoding: lower, as: UTF8.self))
        }
        let column = Int(lower[0]) - 0x61, row = Int(lower[1]) - 0x31
        guard (0..<gridSize).contains(column), (0..<gridSize).contains(row) else { throw .outsideGrid(String(decoding: lower, as: UTF8.self)) }
        return Point(column: column, row: row)
    }

    private static func hints(count: Int, first: Point, isLine: Bool) -> [String] {
        var hints: [String] = []
        if count < Self.recommendedPoints {
            hints.append("a pattern of \(count) points is easy to guess: use \(Self.recommendedPoints) or more")
        }
        let corners = [0, Self.gridSize - 1]
        if corners.contains(first.column), corners.contains(first.row) {
            hints.append("many patterns start in a corner: start somewhere else")
        }
        if isLine { hints.append("a straight line is among the first patterns anyone tries") }
        return hints
    }

    /// Lends the canonical bytes, for handing the pattern on (to the mount daemon's pipe).
    public func withCanonicalBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try secret.withUnsafeBytes(body)
    }

    /// Copies for tests and vectors; the program itself uses `withCanonicalBytes`.
    public var canonicalBytes: [UInt8] { withCanonicalBytes { Array($0) } }
    public var canonical: String { withCanonicalBytes { String(decoding: $0, as: UTF8.self) } }
    public var points: [Point] {
        withCanonicalBytes { bytes in
            stride(from: 0, to: bytes.count, by: 3).map { Point(column: Int(bytes[$0]) - 0x61, row: Int(bytes[$0 + 1]) - 0x31) }
        }
    }

    public static func == (left: Pattern, right: Pattern) -> Bool {
        left.withCanonicalBytes { a in right.withCanonicalBytes { b in a.elementsEqual(b) } }
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
    case noLockedMemory

    public var description: String {
        switch self {
        case .empty: "the pattern is empty: write points like b2-c2-d3-d4"
        case .notAPoint(let token): "'\(token)' is not a point: write a column a-e and a row 1-5, like b2"
        case .outsideGrid(let token): "\(token) is not a point of the 5×5 grid"
        case .usedTwice(let point): "\(point) is used twice"
        case .notNext(let point, let previous): "\(point) is not next to \(previous)"
        case .tooShort(let count): "a pattern needs at least \(Pattern.minimumPoints) points, this one has \(count)"
        case .noLockedMemory: "no memory to hold the pattern"
        }
    }
}

import Foundation

/// Progress of long work on a terminal (R-INT, item 7): one line, redrawn in place, with what is
/// done, the total and the rate (`fsck: 1200/5000 chunks (24%), 310/s`), erased when the work
/// ends so that the command's own output follows on a clean line. Nothing at all when the
/// output is not a terminal: a log or a pipe gets only the result.
///
/// Used by `fsck`, `audit` and `repattern`; sync is meant to report through it too. Not
/// thread-safe: one worker updates it.
final class ProgressReporter {
    private let output: (any TextOutput)?
    private let label: String
    private let unit: String
    private let started: Date
    private var lastDrawn: Date?
    private var drewSomething = false

    /// At most this many redraws per second: a terminal is slower than a tight loop.
    static let redrawInterval = 0.1

    init(_ label: String, unit: String, to output: any TextOutput) {
        self.output = output.isTerminal ? output : nil
        self.label = label
        self.unit = unit
        started = Date()
    }

    /// `done` of `total` units are done. The first and the last update are always drawn.
    func update(done: Int, total: Int) {
        guard let output else { return }
        let now = Date()
        if done < total, let lastDrawn, now.timeIntervalSince(lastDrawn) < Self.redrawInterval { return }
        lastDrawn = now
        drewSomething = true
        output.write("\r\u{1B}[K" + Self.line(label, unit: unit, done: done, total: total, seconds: now.timeIntervalSince(started)))
    }

    /// Erases the line, so that the next output starts at the line's beginning.
    func finish() {
        guard let output, drewSomething else { return }
        drewSomething = false
        output.write("\r\u{1B}[K")
    }

    /// The text of one progress line.
    static func line(_ label: String, unit: String, done: Int, total: Int, seconds: Double) -> String {
        let percent = total > 0 ? done * 100 / total : 100
        var text = "\(label): \(done)/\(total) \(unit) (\(percent)%)"
        if seconds >= 0.05 { text += ", \(Int((Double(done) / seconds).rounded()))/s" }
        return text
    }
}

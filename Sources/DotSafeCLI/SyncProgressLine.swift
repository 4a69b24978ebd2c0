import VaultFormat
import VaultSync

/// A sync's progress on a terminal (issue 16 item 7): the step it is at (`sync: 2/6 steps`),
/// then each batch of files as rclone moves it, with bytes and rates (`sync up: 120/640 files
/// (18%), 31.5/167.8 MB, 16 files/s, 4.2 MB/s`), on one line erased at the end. Nothing when
/// the output is not a terminal. Not thread-safe: the sync's one thread reports.
final class SyncProgressLine {
    private let output: any TextOutput
    private var shown: ProgressReporter?

    init(to output: any TextOutput) {
        self.output = output
    }

    func step(_ step: Int, of steps: Int) {
        shown = ProgressReporter("sync", unit: "steps", to: output)
        shown?.update(done: step, total: steps)
    }

    /// A batch starts at 0 files done: its rates count from then.
    func moved(_ progress: SyncProgress) {
        if progress.done == 0 {
            shown = ProgressReporter("sync \(progress.direction.rawValue)", unit: "files", bytesPerUnit: Format.fileSize, to: output)
        }
        shown?.update(done: progress.done, total: progress.total)
    }

    /// Erases the line before the command's result.
    func finish() {
        shown?.finish()
    }
}

// DotSafeFuzz: the libFuzzer driver for the targets of FuzzTargets (tools/fuzz builds it).
//   DotSafeFuzz TARGET [libFuzzer options] [CORPUS…]   fuzz (only when built by tools/fuzz)
//   DotSafeFuzz TARGET FILE|FOLDER…                     replay files through the target
//   DotSafeFuzz seeds FOLDER                            write the seed corpus, one folder per target
//   DotSafeFuzz list                                    the target names
// The target may also come from DOTSAFE_FUZZ_TARGET. libFuzzer is linked only when the build
// defines DOTSAFE_LIBFUZZER (tools/fuzz); a normal build replays, so it needs no fuzzer runtime.
import Foundation
import FuzzTargets

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("DotSafeFuzz: \(message)\n".utf8))
    exit(64)
}

var arguments = CommandLine.arguments
let program = arguments.removeFirst()
if arguments.first == "list" {
    for target in FuzzTarget.all { print(target.name) }
    exit(0)
}
if arguments.first == "seeds" {
    guard arguments.count == 2 else { fail("usage: DotSafeFuzz seeds FOLDER") }
    for (target, seeds) in FuzzSeeds.all() {
        let folder = URL(fileURLWithPath: arguments[1]).appendingPathComponent(target)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, bytes) in seeds { try Data(bytes).write(to: folder.appendingPathComponent(name)) }
    }
    exit(0)
}
let targetName: String
if let first = arguments.first, FuzzTarget.named(first) != nil {
    targetName = arguments.removeFirst()
} else if let name = ProcessInfo.processInfo.environment["DOTSAFE_FUZZ_TARGET"] {
    targetName = name
} else {
    fail("usage: DotSafeFuzz TARGET … (targets: \(FuzzTarget.all.map(\.name).joined(separator: ", ")))")
}
guard let target = FuzzTarget.named(targetName) else { fail("no target '\(targetName)'") }

#if DOTSAFE_LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The callback is a C function: it finds the target through this global, set once before the driver starts.
nonisolated(unsafe) var selected: FuzzTarget? = nil
selected = target
var cArguments: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
var argc = CInt(arguments.count + 1)
let status = cArguments.withUnsafeMutableBufferPointer { buffer -> CInt in
    var argv = buffer.baseAddress!
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        selected!.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }
}
exit(status)
#else
// Replay: every file named, or every file in every folder named.
var count = 0
for path in arguments {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { fail("no file '\(path)'") }
    let files = isFolder.boolValue
        ? try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { "\(path)/\($0)" }
        : [path]
    for file in files {
        target.run(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        count += 1
    }
}
print("\(target.name): replayed \(count) inputs; built without libFuzzer (use tools/fuzz to fuzz)")
#endif

import Foundation

#if SESAME_LIBFUZZER
    import CLibFuzzer
#endif

/// A fuzz target's main. Built by scripts/fuzz (with `SESAME_LIBFUZZER`), it hands the target to
/// libFuzzer's driver. Built plainly, it feeds the target every file named on the command line (or
/// found in a named directory) once, so the seed corpora and past findings replay in the ordinary
/// build and a finding can be reproduced under a debugger.
public enum FuzzMain {
    /// The target: one input's bytes, returning 0 (libFuzzer's convention).
    public typealias Target = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

    /// Runs `target` under libFuzzer or over the named files, and exits.
    public static func run(_ target: Target) -> Never {
        #if SESAME_LIBFUZZER
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv, target))
        #else
            replay(target)
        #endif
    }

    private static func replay(_ target: Target) -> Never {
        let paths = CommandLine.arguments.dropFirst()
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: \(CommandLine.arguments[0]) FILE-OR-DIRECTORY...\n".utf8))
            exit(64)
        }
        var count = 0
        for file in paths.flatMap(inputs(at:)) {
            guard let data = FileManager.default.contents(atPath: file) else {
                FileHandle.standardError.write(Data("cannot read \(file)\n".utf8))
                exit(66)
            }
            _ = data.withUnsafeBytes { target($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
            count += 1
        }
        print("replayed \(count) inputs")
        exit(0)
    }

    /// The files at `path`: the file itself, or a directory's visible files in name order.
    private static func inputs(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return [path]
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { path + "/" + $0 }
    }
}

// Refuses `import Foundation` in the modules of the programs Sesame ships without it (the
// release build stops modules from linking Foundation by themselves: scripts/lib/release-build),
// naming the file and line, in every build: otherwise such an import builds in debug and fails
// only at the release link, with a missing symbol far from the import.
// Usage: sesame-foundation-check MODULE OUTPUT.swift SOURCE.swift...
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The build tool: an `@main` type rather than top-level code, so it also builds where the
/// compiler parses every file as a library (the fuzzing build's `-sanitize=fuzzer` does).
@main
enum FoundationCheck {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else {
            say("usage: sesame-foundation-check MODULE OUTPUT.swift SOURCE.swift...")
            exit(2)
        }
        let (module, output) = (arguments[0], arguments[1])
        var found = false
        for source in arguments.dropFirst(2).sorted() {
            // Split on every line break, "\r\n" (one Character) included.
            let lines = try String(contentsOfFile: source, encoding: .utf8).split(
                omittingEmptySubsequences: false,
                whereSeparator: \.isNewline
            )
            for (index, line) in lines.enumerated() where importsFoundation(line) {
                found = true
                say(
                    "\(source):\(index + 1):1: error: \(module) imports Foundation, which the programs it is part of "
                        + "do not link; import FoundationEssentials (or a module of the toolchain's own) instead"
                )
            }
        }
        if found { exit(1) }
        // The build compiles this file into the module, so the check runs before the module builds.
        let checked = "// No file of \(module) imports Foundation.\n"
        try checked.write(toFile: output, atomically: true, encoding: .utf8)
    }

    /// Writes `message` and a newline to standard error.
    private static func say(_ message: String) {
        var line = message + "\n"
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// Whether `line` imports Foundation itself, a part of it (`import struct Foundation.URL`) or
    /// a module that links it (FoundationNetworking, FoundationXML), with any attribute or access
    /// level before the import; FoundationEssentials and FoundationInternationalization stand
    /// alone and are allowed.
    static func importsFoundation(_ line: Substring) -> Bool {
        let modifiers: Set<Substring> = ["public", "package", "internal", "fileprivate", "private"]
        var words = line.split(whereSeparator: { $0.isWhitespace || $0 == ";" })[...]
        while let first = words.first, first.hasPrefix("@") || modifiers.contains(first) { words.removeFirst() }
        guard words.popFirst() == "import", var module = words.popFirst() else { return false }
        let kinds: Set<Substring> = ["class", "struct", "enum", "protocol", "typealias", "func", "var", "let"]
        if kinds.contains(module), let named = words.popFirst() { module = named }
        let name = module.split(separator: ".").first ?? module
        let standingAlone: Set<Substring> = ["FoundationEssentials", "FoundationInternationalization"]
        return name.hasPrefix("Foundation") && !standingAlone.contains(name)
    }
}

// Turns interfaces/*.varlink into Swift string literals, so the daemon serves exactly the
// published contract with no data files to install beside the binary.
// Usage: sesame-interface-embedder OUTPUT.swift INPUT.varlink...
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The build tool: an `@main` type rather than top-level code, so it also builds where the
/// compiler parses every file as a library (the fuzzing build's `-sanitize=fuzzer` does).
@main
enum InterfaceEmbedder {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard let output = arguments.first else {
            fail("usage: sesame-interface-embedder OUTPUT.swift INPUT.varlink...", status: 2)
        }
        var entries: [(name: String, text: String)] = []
        for input in arguments.dropFirst().sorted() {
            let text = try String(contentsOfFile: input, encoding: .utf8)
            let declaration = text.split(separator: "\n").first { $0.hasPrefix("interface ") }
            guard
                let name = declaration?.dropFirst("interface ".count).filter({ !$0.isWhitespace }),
                !name.isEmpty
            else {
                fail("\(input): no 'interface NAME' line", status: 1)
            }
            guard !text.contains("\"\"\"#") else { fail("\(input): contains a raw string delimiter", status: 1) }
            entries.append((name, text))
        }
        try source(of: entries).write(toFile: output, atomically: true, encoding: .utf8)
    }

    private static func source(of entries: [(name: String, text: String)]) -> String {
        var source = "// Generated at build time from interfaces/*.varlink; edit those files, not this one.\n\n"
        source += "/// The text of every interface in interfaces/, keyed by interface name.\n"
        source += "enum InterfaceDescriptions {\n    static let byName: [String: String] = [\n"
        for entry in entries {
            // A multi-line literal drops the line break before its closing delimiter, so one is
            // added to keep the text byte for byte.
            source += "        \"\(entry.name)\": #\"\"\"\n\(entry.text)\n\"\"\"#,\n"
        }
        return source + "    ]\n}\n"
    }

    private static func fail(_ message: String, status: Int32) -> Never {
        var line = message + "\n"
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(status)
    }
}

// Turns interfaces/*.varlink into Swift string literals, so the daemon serves exactly the
// published contract with no data files to install beside the binary.
// Usage: sesame-interface-embedder OUTPUT.swift INPUT.varlink...
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: sesame-interface-embedder OUTPUT.swift INPUT.varlink...\n".utf8))
    exit(2)
}

var entries: [(name: String, text: String)] = []
for input in arguments.dropFirst().sorted() {
    let text = try String(contentsOfFile: input, encoding: .utf8)
    let declaration = text.split(separator: "\n").first { $0.hasPrefix("interface ") }
    guard let name = declaration?.dropFirst("interface ".count).trimmingCharacters(in: .whitespaces), !name.isEmpty
    else {
        FileHandle.standardError.write(Data("\(input): no 'interface NAME' line\n".utf8))
        exit(1)
    }
    guard !text.contains("\"\"\"#") else {
        FileHandle.standardError.write(Data("\(input): contains a raw string delimiter\n".utf8))
        exit(1)
    }
    entries.append((name, text))
}

var source = "// Generated at build time from interfaces/*.varlink; edit those files, not this one.\n\n"
source += "/// The text of every interface in interfaces/, keyed by interface name.\n"
source += "enum InterfaceDescriptions {\n    static let byName: [String: String] = [\n"
for entry in entries {
    // A multi-line literal drops the line break before its closing delimiter, so one is added
    // to keep the text byte for byte.
    source += "        \"\(entry.name)\": #\"\"\"\n\(entry.text)\n\"\"\"#,\n"
}
source += "    ]\n}\n"
try source.write(toFile: output, atomically: true, encoding: .utf8)

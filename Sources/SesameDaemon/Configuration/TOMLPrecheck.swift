/// What toml++ (the parser inside TOMLKit) must not be given. A fuzzer (scripts/fuzz config)
/// found invalid TOML on which it fails an assertion, which aborts sesamed in a debug build and
/// is undefined behaviour (an `assume`) in a release one, on start-up or on a reload. Such text
/// is refused here first, with a syntax error pointing at it.
enum TOMLPrecheck {
    /// Refuses `text` if it has a line the parser cannot take, or nests keys too deep for it.
    static func check(_ text: String, path: String) throws(ConfigurationError) {
        // Lines of Unicode scalars, as the parser reads them: as Characters, "\r\n" is one that
        // is not "\n", and a combining mark after `[` would join it.
        var scalars = Array(text.unicodeScalars)[...]
        // The parser skips a byte-order mark that starts the text, and so does the check.
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
        let lines = scalars.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            if let (column, message) = controlCharacter(in: line) ?? badTableName(in: line) {
                throw .syntax(path: path, line: index + 1, column: column, message: message)
            }
        }
        if let (line, column, message) = structuralProblem(scalars) {
            throw .syntax(path: path, line: line, column: column, message: message)
        }
    }

    /// How many dots and inline tables a file may have outside strings and comments. Each part
    /// of a dotted key (`a.b.c = 1`, `[a.b.c]`) and each inline table nests a table one deeper,
    /// and toml++ walks that tree recursively: a key of 30,000 parts overflowed the stack, at
    /// start-up and on a reload. Sesame's own files have a handful.
    static let nestingLimit = 1000

    /// The first of two shapes outside strings and comments, as line, column and what is wrong;
    /// nil when the file has neither. The dot or brace beyond `nestingLimit`; and a `}` where an
    /// array is open (`a = [1, }`), which can close nothing there: toml++ asserted on it, and a
    /// release build aborted on such a config or provider file at start-up or on a reload.
    /// Strings (basic, literal, multi-line) and comments are skipped.
    private static func structuralProblem(_ scalars: ArraySlice<Unicode.Scalar>) -> (Int, Int, String)? {
        var structure = Structure()
        var (line, column) = (1, 0)
        var quote: String?  // the delimiter of the string being read, if any
        var comment = false
        var index = scalars.startIndex
        func startsWith(_ text: String) -> Bool { scalars[index...].starts(with: text.unicodeScalars) }
        while index < scalars.endIndex {
            let scalar = scalars[index]
            column += 1
            var step = 1
            if scalar == "\n" {
                (line, column, comment) = (line + 1, 0, false)
                if quote == "\"" || quote == "'" { quote = nil }  // single-line strings end with it
            } else if comment {
            } else if let delimiter = quote {
                if scalar == "\\", delimiter.hasPrefix("\"") {
                    step = 2
                } else if startsWith(delimiter) {
                    (quote, step) = (nil, delimiter.unicodeScalars.count)
                    // TOML 1.0.0: up to two quotes of the string's own may stand right before a
                    // multi-line string's closing three (`"""x""""` is `x"`).
                    if step == 3 {
                        step += scalars[min(index + step, scalars.endIndex)...].prefix(2).prefix { $0 == scalar }.count
                    }
                }
            } else if scalar == "#" {
                comment = true
            } else if scalar == "\"" || scalar == "'" {
                quote =
                    startsWith(String(repeating: String(scalar), count: 3))
                    ? String(repeating: String(scalar), count: 3) : String(scalar)
                step = quote?.unicodeScalars.count ?? 1
            } else if let problem = structure.take(scalar) {
                return (line, column, problem)
            }
            index = min(index + step, scalars.endIndex)
        }
        return nil
    }

    /// What the brackets, braces and dots outside strings and comments add up to so far.
    private struct Structure {
        /// Dots and inline tables seen.
        var nesting = 0
        /// The brackets and braces open, innermost last.
        var open: [Unicode.Scalar] = []

        /// Takes the next scalar outside strings and comments; what is wrong once it is there.
        mutating func take(_ scalar: Unicode.Scalar) -> String? {
            switch scalar {
            case ".", "{":
                nesting += 1
                if nesting > nestingLimit {
                    return "keys nest too deep (more than \(nestingLimit) dots and inline tables outside strings)"
                }
                if scalar == "{" { open.append(scalar) }
            case "[": open.append(scalar)
            case "]", "}":
                if scalar == "}", open.last == "[" { return "'}' cannot stand in an array" }
                _ = open.popLast()
            default: break
            }
            return nil
        }
    }

    /// TOML 1.0.0 allows no control character but tab anywhere (line breaks aside): not in
    /// comments, strings or keys. toml++ asserted on `[\u{1}`.
    private static func controlCharacter(in line: ArraySlice<Unicode.Scalar>) -> (column: Int, message: String)? {
        for (offset, scalar) in line.enumerated()
        where (scalar.value < 0x20 && scalar != "\t" && scalar != "\r") || scalar.value == 0x7f {
            let code = String(scalar.value, radix: 16, uppercase: true)
            return (
                offset + 1, "control character U+\(String(repeating: "0", count: 4 - code.count))\(code) is not allowed"
            )
        }
        return nil
    }

    /// A table header (`[name]`, `[[name]]`) names a bare or quoted key (TOML 1.0.0, "Table");
    /// toml++ asserted on `[!name]`. A line starting with `[` is a table header in every file
    /// sesamed reads (none of its settings takes an array of arrays), so one whose name is
    /// missing (`[` alone on its line, which toml++ also asserted on) or starts with anything a
    /// key cannot start with is refused. `[]` is left to the parser, which names that error itself.
    private static func badTableName(in line: ArraySlice<Unicode.Scalar>) -> (column: Int, message: String)? {
        let scalars = Array(line)
        let blank: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        var index = scalars.firstIndex { !blank($0) } ?? scalars.count
        guard index < scalars.count, scalars[index] == "[" else { return nil }
        index += 1
        if index < scalars.count, scalars[index] == "[" { index += 1 }
        while index < scalars.count, blank(scalars[index]) { index += 1 }
        guard index < scalars.count else { return (index + 1, "a table header needs a name") }
        let first = scalars[index]
        guard first != "]" else { return nil }
        let startsAKey =
            first == "\"" || first == "'" || first == "_" || first == "-"
            || ("a"..."z").contains(first) || ("A"..."Z").contains(first) || ("0"..."9").contains(first)
        return startsAKey ? nil : (index + 1, "'\(first.escaped(asASCII: true))' cannot start a table name")
    }
}

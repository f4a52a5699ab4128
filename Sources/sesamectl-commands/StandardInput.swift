import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What sesamectl reads on standard input: a token response or a handed-over code, never more
/// than `limit` bytes (a token response with an ID token is a few kilobytes).
enum StandardInput {
    /// The most that is read; more is refused rather than kept.
    static let limit = 1 << 20

    /// Everything on standard input up to its end, retrying reads a signal interrupted.
    static func read() throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count == 0 { return data }
            if count < 0 {
                if errno == EINTR { continue }
                throw ExitError.message("cannot read standard input: \(String(cString: strerror(errno))).")
            }
            data.append(contentsOf: buffer[..<count])
            guard data.count <= limit else {
                throw ExitError.message(
                    "standard input holds more than \(limit) bytes: not a token response or code."
                )
            }
        }
    }
}

import CSystemd

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Sockets handed over by the service manager (`LISTEN_FDS`, `LISTEN_FDNAMES`).
public enum SocketActivation {
    /// One inherited descriptor and the name its `.socket` unit gave it.
    public struct Socket: Sendable, Hashable {
        /// The file descriptor number.
        public var descriptor: Int32
        /// `FileDescriptorName=` of the socket unit, or `unknown` when it set none.
        public var name: String
    }

    /// Why inherited sockets could not be used.
    public enum ActivationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// `sd_listen_fds_with_names` failed.
        case invalidEnvironment(errno: Int32)
        /// Sockets were passed, but none under the expected name.
        case noSocketNamed(String, passed: [String])

        public var description: String {
            switch self {
            case .invalidEnvironment(let code):
                "cannot read the sockets passed by the service manager: \(String(cString: strerror(code)))"
            case .noSocketNamed(let name, let passed):
                "the service manager passed sockets named \(passed.joined(separator: ", ")), none named \(name)"
            }
        }
    }

    /// Every socket the service manager passed to this process; the environment is left intact.
    public static func inheritedSockets() throws(ActivationError) -> [Socket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(0, &names)
        guard count >= 0 else { throw .invalidEnvironment(errno: -count) }
        defer {
            if let names {
                for index in 0..<Int(count) { free(names[index]) }
                free(names)
            }
        }
        return (0..<count).map { index in
            let name = names?[Int(index)].map { String(cString: $0) } ?? "unknown"
            return Socket(descriptor: SD_LISTEN_FDS_START + index, name: name)
        }
    }

    /// The inherited socket named `name`; with a single unnamed socket, that one. Nil when the
    /// process was not socket-activated.
    public static func socket(named name: String) throws(ActivationError) -> Socket? {
        let sockets = try inheritedSockets()
        guard !sockets.isEmpty else { return nil }
        if let match = sockets.first(where: { $0.name == name }) { return match }
        if sockets.count == 1, sockets[0].name == "unknown" { return sockets[0] }
        throw .noSocketNamed(name, passed: sockets.map(\.name))
    }
}

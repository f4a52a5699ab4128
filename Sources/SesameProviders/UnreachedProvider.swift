import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a request never reached the provider, in the system's words and with the address it was
/// sent to ("connection refused by 127.0.0.1:18601"): what a person mending a provider file needs
/// to see, where the error's type name ("IOError") tells them nothing. Built from the error's
/// errno and the request URL's host and port only, never from anything the server sent.
enum UnreachedProvider {
    /// The sentence for `error`, thrown by the transport for a request to `url`.
    static func reason(_ error: any Error, url: String) -> String {
        let address = address(of: url)
        switch error {
        case let error as IOError:
            return sentence(errno: error.errnoCode, address: address)
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "\(address): the name does not resolve" }
            if let failure = error.connectionErrors.lazy.compactMap({ $0.error as? IOError }).first {
                return sentence(errno: failure.errnoCode, address: address)
            }
            return "cannot connect to \(address)"
        case is SocketAddressError.UnknownHost:
            return "\(address): the name does not resolve"
        case let error as HTTPClientError where error == .remoteConnectionClosed:
            return "\(address) closed the connection before it answered"
        default:
            return "cannot reach \(address) (\(type(of: error)))"
        }
    }

    /// `host:port` of `url`, the port the scheme's default when the URL names none.
    static func address(of url: String) -> String {
        guard let parsed = URL(string: url), let host = parsed.host else { return "the provider" }
        let port = parsed.port ?? (parsed.scheme?.lowercased() == "http" ? 80 : 443)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func sentence(errno code: CInt, address: String) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused by \(address)"
        case ECONNRESET: return "\(address) reset the connection"
        // glibc's strerror returns its own static text for a known number (and, since 2.32, a
        // thread's own buffer for any other), so calls on several threads do not collide.
        default: return "cannot connect to \(address): \(String(cString: strerror(code)).lowercased())"
        }
    }
}

import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A TLS failure that is a configuration problem rather than an outage: the provider's
/// certificate does not verify. Retrying will not fix it; trusting the right CA will.
struct TLSFailure: Sendable {
    /// Why the certificate was refused, as far as TLS tells.
    enum Reason: Sendable {
        /// The certificate is for another name.
        case nameMismatch
        /// The chain does not verify: an untrusted issuer, or a certificate out of its validity.
        case chainRejected
    }

    let reason: Reason

    /// The TLS failure `error` amounts to, or nil when it is not a certificate problem.
    init?(_ error: any Error) {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            reason = .nameMismatch
        } else if let ssl = error as? NIOSSLError, case .handshakeFailed(.sslError(let stack)) = ssl,
            stack.contains(where: { "\($0)".contains("CERTIFICATE_VERIFY_FAILED") })
        {
            reason = .chainRejected
        } else {
            return nil
        }
    }

    /// One sentence for the person who configures the provider, naming `ca_file`. For a
    /// refused chain, `url`'s certificate is looked at once more to tell an expired one from an
    /// untrusted issuer (BoringSSL's error alone does not say which).
    func explanation(url: String, caFile: String?) async -> String {
        let what: String
        switch reason {
        case .nameMismatch:
            what = "its certificate is for another name than the provider's host"
        case .chainRejected:
            what = await Self.diagnose(url: url) ?? "its certificate does not verify"
        }
        let fix =
            caFile.map { "the CA bundle in ca_file (\($0)) does not vouch for it" }
            ?? "for a private CA, set ca_file in the provider file"
        return "TLS: the provider is not trusted: \(what); \(fix)"
    }

    /// Fetches the leaf certificate of `url` without trusting it, and says what is wrong with
    /// its validity period, or that its issuer is not trusted. Nil if it cannot be fetched.
    private static func diagnose(url: String) async -> String? {
        guard let components = URLComponents(string: url), let host = components.host else { return nil }
        let port = components.port ?? 443
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let seen = NIOLockedValueBox<NIOSSLCertificate?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context,
                        serverHostname: nil,
                        customVerificationCallback: { certificates, promise in
                            seen.withLockedValue { $0 = certificates.first }
                            promise.succeed(NIOSSLVerificationResult.failed)
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        guard let channel = try? await bootstrap.connect(host: host, port: port).get() else { return nil }
        try? await channel.closeFuture.get()
        guard let leaf = seen.withLockedValue({ $0 }) else { return nil }
        let now = time(nil)
        if leaf.notValidAfter < now {
            let date = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)).formatted(.iso8601)
            return "its certificate expired at \(date)"
        }
        if leaf.notValidBefore > now {
            return "its certificate is not valid yet"
        }
        return "its certificate is not signed by a CA sesamed trusts (an untrusted issuer)"
    }
}

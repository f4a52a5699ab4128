import FoundationEssentials
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

    /// One sentence for the person who configures the provider, naming `ca_file`; nil when a
    /// second look at `url` gets no certificate at all (the client may be re-reporting an older
    /// failure for what is now a stall or an outage). For a refused chain, the certificate's
    /// dates tell an expired one from an untrusted issuer (BoringSSL's error alone does not).
    func explanation(url: String, caFile: String?) async -> String? {
        guard let leaf = await Self.peerCertificate(url: url) else { return nil }
        let what: String
        switch reason {
        case .nameMismatch:
            what = "its certificate is for another name than the provider's host"
        case .chainRejected:
            what =
                Self.validityProblem(of: leaf)
                ?? "its certificate is not signed by a CA sesamed trusts (an untrusted issuer)"
        }
        let fix =
            caFile.map { "the CA bundle in ca_file (\($0)) does not vouch for it" }
            ?? "for a private CA, set ca_file in the provider file"
        return "TLS: the provider is not trusted: \(what); \(fix)"
    }

    private static func validityProblem(of leaf: NIOSSLCertificate) -> String? {
        let now = time(nil)
        if leaf.notValidAfter < now {
            let date = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)).formatted(.iso8601)
            return "its certificate expired at \(date)"
        }
        return leaf.notValidBefore > now ? "its certificate is not valid yet" : nil
    }

    /// The leaf certificate `url`'s server presents, fetched without trusting it; nil when no
    /// handshake gets that far within a few seconds.
    private static func peerCertificate(url: String) async -> NIOSSLCertificate? {
        guard let components = URLComponents(string: url), let host = components.host else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        // SNI, as the real request sends it: a shared front end picks the certificate by name.
        let serverName = host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? nil : host
        let seen = NIOLockedValueBox<NIOSSLCertificate?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(3))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context,
                        serverHostname: serverName,
                        customVerificationCallback: { certificates, promise in
                            seen.withLockedValue { $0 = certificates.first }
                            promise.succeed(NIOSSLVerificationResult.failed)
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        guard let channel = try? await bootstrap.connect(host: host, port: components.port ?? 443).get() else {
            return nil
        }
        // A server that accepts but never completes the handshake must not hold the caller.
        channel.eventLoop.scheduleTask(in: .seconds(3)) { channel.close(promise: nil) }
        try? await channel.closeFuture.get()
        return seen.withLockedValue { $0 }
    }
}

import FoundationEssentials
import SesameProtocol
import SesameVarlink
import SesameWire

extension SesameClient {
    /// `accessToken(for:scopes:audience:resource:)` on a connection of its own, made and read with
    /// blocking calls on this thread (`VarlinkOneShot`): for a program that needs one token and
    /// exits, which then starts no event loop. `socketPath` as for `connect`.
    public static func oneShotAccessToken(
        for account: String,
        scopes: [String]? = nil,
        audience: String? = nil,
        resource: String? = nil,
        socketPath: String? = nil
    ) throws -> AccessToken {
        let parameters = GetTokenParameters(account: account, scopes: scopes, audience: audience, resource: resource)
        do {
            return try VarlinkOneShot.call(
                AccountsContract.getToken,
                parameters,
                unixSocketPath: socketPath ?? defaultSocketPath()
            )
        } catch let error as VarlinkError {
            throw SesameError(error)
        } catch let error as VarlinkClientError {
            throw SesameError(error)
        }
    }
}

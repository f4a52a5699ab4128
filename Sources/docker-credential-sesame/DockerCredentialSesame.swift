import Foundation
import SesameCredentialHelper

/// `docker-credential-sesame`: docker's credential helper for Sesame accounts
/// (docker/docker-credential-helpers: `get`, `list`, `erase`, `store`, `version`). docker
/// passes no options, so the account for a registry comes from the URL map every helper
/// shares, `$XDG_CONFIG_HOME/sesame/credentials.toml`. Configure it in
/// `~/.docker/config.json` as `"credHelpers": {"registry.example.com": "sesame"}`.
@main
struct DockerCredentialSesame {
    /// What docker-credential-helpers' client reads as "nothing stored for this server".
    static let notFound = "credentials not found in native keychain"
    /// The user name sent with an access token: registries that take OAuth tokens as the
    /// password ignore it, and most want one.
    static let username = "oauth2"

    static func main() async {
        // docker may close its end early; a write then fails with EPIPE instead of killing us.
        signal(SIGPIPE, SIG_IGN)
        let action = CommandLine.arguments.dropFirst().first ?? ""
        do {
            switch action {
            case "get": try await get(server: readServer())
            case "erase": try await erase(server: readServer())
            case "list": try list()
            case "store":
                throw HelperFailure(
                    "sesamed keeps the tokens; log in with `sesamectl login PROVIDER` and map the registry in "
                        + "\(CredentialHosts.path())"
                )
            case "version": write("docker-credential-sesame (Sesame)\n")
            default: throw HelperFailure("unknown action '\(action.prefix(32))'; use get, list, erase or store")
            }
        } catch {
            // The helpers' protocol: the error's text on stdout, and a failing exit status.
            write("\(error)\n")
            exit(1)
        }
    }

    /// The server URL docker writes on stdin (bounded: it is one URL).
    private static func readServer() -> String {
        let data = (try? FileHandle.standardInput.read(upToCount: 8192)) ?? nil
        return String(decoding: data ?? Data(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func account(for server: String) throws -> String {
        let hosts = try CredentialHosts.load(from: CredentialHosts.path())
        // docker names registries with or without a scheme; the map's keys are URLs.
        let url = server.contains("://") ? server : "https://" + server
        guard let account = hosts.account(for: url) else { throw HelperFailure(notFound) }
        return account
    }

    private static func get(server: String) async throws {
        let token = try await HelperSession(socket: nil).token(for: try account(for: server))
        let answer = ["ServerURL": server, "Username": username, "Secret": token.accessToken]
        try writeJSON(answer)
    }

    /// docker erases what a registry refused (and on `docker logout`): sesamed refreshes once,
    /// for every program that uses the account.
    private static func erase(server: String) async throws {
        let account = try account(for: server)
        let session = HelperSession(socket: nil)
        let current = try await session.token(for: account)
        try await session.reportRejected(account: account, accessToken: current.accessToken)
    }

    /// Every mapped URL, with the user name `get` sends.
    private static func list() throws {
        let hosts = try CredentialHosts.load(from: CredentialHosts.path()).hosts
        let listing = hosts.mapValues { _ in username }
        try writeJSON(listing)
    }

    private static func writeJSON(_ object: [String: String]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        write(String(decoding: data, as: UTF8.self))
    }

    private static func write(_ text: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    }
}

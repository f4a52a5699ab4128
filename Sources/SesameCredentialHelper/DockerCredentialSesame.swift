import FoundationEssentials
import SesameClient
import SesameProtocol
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `docker-credential-sesame`: docker's credential helper for Sesame accounts
/// (docker/docker-credential-helpers: `get`, `list`, `erase`, `store`, `version`). docker
/// passes no options, so the account for a registry comes from the URL map every helper
/// shares, `$XDG_CONFIG_HOME/sesame/credentials.toml`. Configure it in
/// `~/.docker/config.json` as `"credHelpers": {"registry.example.com": "sesame"}`. A name of
/// sesamectl-commands, which runs this when it is started under that name.
public enum DockerCredentialSesame {
    /// What docker-credential-helpers' client reads as "nothing stored for this server".
    static let notFound = "credentials not found in native keychain"
    /// The user name sent with an access token: registries that take OAuth tokens as the
    /// password ignore it, and most want one.
    static let username = "oauth2"

    /// Answers the action named by the first argument, reading docker's request on stdin.
    public static func main() async {
        let action = CommandLine.arguments.dropFirst().first ?? ""
        do {
            switch action {
            case "get": try await get(server: readServer())
            // docker erases a registry's credentials on `docker logout`, to forget them: sesamed
            // keeps them, for every program using the account, so nothing is done here
            // (`sesamectl logout` ends the account's session).
            case "erase": break
            case "list": try list()
            case "store": try await store(readInput())
            // `version` is the protocol's; `--version` what a person tries on any program.
            case "version", "--version": write("docker-credential-sesame (Sesame) \(SesameVersion.current)\n")
            default: throw HelperError("unknown action '\(action.prefix(32))'; use get, list, erase or store")
            }
        } catch {
            // The helpers' protocol: the error's text on stdout, and a failing exit status.
            write("\(error)\n")
            exit(1)
        }
    }

    /// What docker writes on stdin (bounded: a URL, or `store`'s one small JSON object).
    private static func readInput() -> [UInt8] {
        // An access token may be 64 KiB (sesamed's bound), and `store`'s JSON holds one.
        let limit = 256 * 1024
        var input = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let received = input.withUnsafeMutableBytes { buffer in
                read(STDIN_FILENO, buffer.baseAddress! + count, limit - count)  // ! : the array is not empty
            }
            if received > 0 {
                count += received
            } else if received == 0 || errno != EINTR {
                break
            }
        }
        return Array(input[..<count])
    }

    /// The server URL docker writes on stdin, without the white space around it.
    private static func readServer() -> String {
        // ASCII white space, as docker-credential-helpers' strings.TrimSpace sees it in a URL.
        let isSpace: (UInt8) -> Bool = { [0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D].contains($0) }
        let input = readInput()
        let trimmed = input.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return String(decoding: trimmed, as: UTF8.self)
    }

    /// docker names registries with or without a scheme; the map's keys are URLs.
    private static func mapKey(for server: String) -> String {
        server.firstRange(of: "://") != nil ? server : "https://" + server
    }

    private static func account(for server: String) throws -> String {
        guard let account = try mappedAccount(for: server) else { throw HelperError(notFound) }
        return account
    }

    /// The account mapped to `server`, which must be fit to be sent a token (https, or http to
    /// this machine), whatever the map says.
    private static func mappedAccount(for server: String) throws -> String? {
        let url = try CredentialURL.checked(mapKey(for: server))
        return try CredentialHosts.load(from: CredentialHosts.path()).account(for: url)
    }

    private static func get(server: String) async throws {
        let token = try await HelperSession(socket: nil).token(for: try account(for: server))
        let answer = ["ServerURL": server, "Username": username, "Secret": token.accessToken]
        try writeJSON(answer)
    }

    /// What `docker login` hands over once the registry took it. sesamed keeps the tokens, so
    /// nothing is stored: the current token of the mapped account is accepted as what `get`
    /// answers anyway (`docker login` with a helper, or `sesamectl token | docker login -u
    /// oauth2 --password-stdin`); any other secret is refused, lest a login seem to keep a password
    /// this helper would never hand out, with the line that maps the registry.
    private static func store(_ input: [UInt8]) async throws {
        guard let credentials = try? JSONDecoder().decode(StoredCredentials.self, from: Data(input)) else {
            throw HelperError("docker's credentials are not a JSON object with ServerURL and Secret")
        }
        let server = credentials.serverURL
        let secret = credentials.secret
        let session = HelperSession(socket: nil)
        if let account = try mappedAccount(for: server) {
            guard try await session.token(for: account).accessToken != secret else { return }
            throw HelperError(
                "docker-credential-sesame stores no passwords: \(server) gets the token of \(account) "
                    + "(\(CredentialHosts.path())); run `docker login \(server)` without a password, "
                    + "or pipe `sesamectl token \(account)` to `docker login -u oauth2 --password-stdin \(server)`"
            )
        }
        // The account whose token this is, when sesamed can say; else a placeholder to fill in.
        let account = ((try? await session.account(holding: secret)) ?? nil) ?? "ACCOUNT"
        throw HelperError(
            "docker-credential-sesame stores no passwords, and \(server) is not mapped to an account; "
                + "add this line under [hosts] in \(CredentialHosts.path()): "
                + "\"\(mapKey(for: server))\" = \"\(account)\""
        )
    }

    /// Every mapped URL, with the user name `get` sends.
    private static func list() throws {
        let hosts = try CredentialHosts.load(from: CredentialHosts.path()).hosts
        let listing = hosts.mapValues { _ in username }
        try writeJSON(listing)
    }

    private static func writeJSON(_ object: [String: String]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        write(String(decoding: try encoder.encode(object), as: UTF8.self))
    }

    private static func write(_ text: String) {
        Output.write(text, to: STDOUT_FILENO)
    }
}

/// What `docker login` hands a helper's `store`: the registry and the secret it took.
private struct StoredCredentials: Decodable {
    let serverURL: String
    let secret: String

    private enum CodingKeys: String, CodingKey {
        case serverURL = "ServerURL"
        case secret = "Secret"
    }
}

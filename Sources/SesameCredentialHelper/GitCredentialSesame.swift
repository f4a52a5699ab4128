import ArgumentParser
import FoundationEssentials
import SesameClient
import SesameProtocol
import SesameWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `git-credential-sesame`: git's credential helper for Sesame accounts. `get` answers with the
/// account's current access token, `erase` tells sesamed the server refused it (one refresh for
/// every program that uses the account), `store` does nothing: the token lives in sesamed only.
/// A name of sesamectl-commands, which runs this when it is started under that name.
public struct GitCredentialSesame: AsyncParsableCommand {
    /// The helper's name, help and usage, as git's documentation and `--help` show them.
    public static let configuration = CommandConfiguration(
        commandName: "git-credential-sesame",
        abstract: "git's credential helper for the accounts sesamed holds.",
        discussion: """
            Configure it for one server, so that no other server gets the token: \
            `git config --global credential.https://git.example.com.helper "sesame --account NAME"`; \
            or map URLs to accounts in $XDG_CONFIG_HOME/sesame/credentials.toml ([hosts] \
            "https://host" = "NAME"; the longest prefix wins) and set `credential.helper sesame`. A \
            token never goes over plain http except to this machine. With git 2.46 or later the \
            token is sent as a Bearer credential that other helpers do not keep; with an older git \
            it is the password (user name --username, default oauth2), which other helpers in the \
            list would store: list this one alone for the server. A session that needs a login is \
            said on stderr with the command to run, and git stops there without prompting.
            """,
        version: SesameVersion.current
    )

    @Option(name: .long, help: "The account (id or name); default: the one credentials.toml maps the URL to.")
    var account: String?

    @Option(name: .long, help: "The user name sent with the token as password, when git asks for none.")
    var username = "oauth2"

    @Option(name: .long, help: "The daemon's socket (default: $SESAME_SOCKET, the user daemon's, or the system's).")
    var socket: String?

    @Argument(help: "What git asks: get, store or erase.")
    var action: String

    /// A helper with no options given, for the argument parser to fill in.
    public init() {}

    /// Answers git's request on standard input, as `action` asks.
    public func run() async throws {
        let request = GitCredential(lines: AnyIterator { readLine(strippingNewline: true) })
        do {
            switch action {
            case "get": write(try await answer(request))
            case "erase": try await erase(request)
            default: break  // store, and actions of later git versions: nothing to keep
            }
        } catch CredentialHelperError.noAccount {
            // No account for this server: another helper, or git's prompt, may have one.
        } catch let refusal as CredentialHelperError {
            // Said, but not the end: another helper may have a credential fit for the server.
            Output.write("git-credential-sesame: \(refusal)\n", to: STDERR_FILENO)
        } catch {
            Output.write("git-credential-sesame: \(error)\n", to: STDERR_FILENO)
            // git then neither asks another helper nor prompts: the sentence says what to do.
            if action == "get" { write(["quit": "1"]) }
        }
    }

    /// The credential for `request`: a Bearer credential where git can take one, else the token
    /// as password. It is marked as not to be kept, so no other helper caches a copy.
    private func answer(_ request: GitCredential) async throws -> KeyValuePairs<String, String> {
        let token = try await HelperSession(socket: socket).token(for: try resolvedAccount(request))
        let expiry = token.expiresAt.map { String(Int($0.timeIntervalSince1970)) }
        if request.capabilities.contains("authtype") {
            return [
                "capability[]": "authtype", "authtype": "Bearer", "credential": token.accessToken, "ephemeral": "true",
                "password_expiry_utc": expiry ?? "",
            ]
        }
        return [
            "username": request.attributes["username"] ?? username, "password": token.accessToken,
            "password_expiry_utc": expiry ?? "",
        ]
    }

    private func erase(_ request: GitCredential) async throws {
        guard let refused = request.presentedToken else { return }
        try await HelperSession(socket: socket).reportRejected(
            account: try resolvedAccount(request),
            accessToken: refused
        )
    }

    private func resolvedAccount(_ request: GitCredential) throws -> String {
        // A bearer token read off the wire is as good as the account's login: https only, or
        // plain http where the wire is this machine's own, whatever --account or the map say.
        let url = try CredentialURL.checked(request.serverURL, shown: request.url)
        if let account { return account }
        let path = CredentialHosts.path()
        guard let mapped = try CredentialHosts.load(from: path).account(for: url) else {
            throw CredentialHelperError.noAccount(url: request.url, mapPath: path)
        }
        return mapped
    }

    private func write(_ pairs: KeyValuePairs<String, String>) {
        let text = pairs.filter { !$0.value.isEmpty }.map { "\($0.key)=\($0.value)\n" }.joined()
        Output.write(text, to: STDOUT_FILENO)
    }
}

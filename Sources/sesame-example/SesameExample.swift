// An example program that uses sesamed the way the README recommends, linking only SesameClient
// (and Foundation): `authorized` to call an API with a current token, and `followEvents` to print
// what happens to the sessions. The end-to-end tests build and run it.
//
//   sesame-example get ACCOUNT URL     GET URL with the account's token; prints the body
//   sesame-example events COUNT        prints the next COUNT session events, one line each
//
// The socket is $SESAME_SOCKET, or where SesameClient looks by default.
import Foundation
import SesameClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The example's entry point.
@main
enum SesameExample {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("get", 3): try await get(account: arguments[1], url: arguments[2])
            case ("events", 2): try await printEvents(count: Int(arguments[1]) ?? 1)
            default:
                FileHandle.standardError.write(Data("usage: sesame-example get ACCOUNT URL | events COUNT\n".utf8))
                exit(64)
            }
        } catch let error as SesameError where error.needsLogin {
            FileHandle.standardError.write(Data("the account needs a new login: run `sesamectl login`\n".utf8))
            exit(5)
        } catch {
            FileHandle.standardError.write(Data("sesame-example: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Calls the API with the account's token; a 401 makes `authorized` have sesamed refresh
    /// (once, shared with everyone else holding that token) and run the request once more.
    static func get(account: String, url: String) async throws {
        guard let target = URL(string: url) else { throw URLError(.badURL) }
        let client = try await SesameClient.connect()
        let body = try await client.authorized(account: account) { token in
            var request = URLRequest(url: target)
            request.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            try TokenRejectedError.check(status: status)
            guard status == 200 else { throw URLError(.badServerResponse) }
            return data
        }
        await client.close()
        FileHandle.standardOutput.write(body)
    }

    /// Prints where the subscription starts, then the next `count` events.
    static func printEvents(count: Int) async throws {
        var printed = 0
        for try await update in SesameClient.followEvents() {
            switch update {
            case .ready(let sequence): say("ready after sequence \(sequence)")
            case .resync(_, let accounts): say("resync: \(accounts.count) accounts")
            case .reconnecting: say("reconnecting")
            case .event(let event):
                say("\(event.sequence) \(event.kind.rawValue) \(event.account) \(event.state.rawValue)")
                printed += 1
                if printed == count { return }
            }
        }
    }

    /// One line on standard output at once, so a reader sees each event as it happens.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

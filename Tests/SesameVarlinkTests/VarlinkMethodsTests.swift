import Logging
import SesameWire
import Synchronization
import Testing

@testable import SesameVarlink

/// The dispatch table on its own: which of a method's answerers a call reaches, and what a
/// method that only streams refuses.
@Suite struct VarlinkMethodsTests {
    typealias Members = [String: JSONValue]
    private static let interface = "org.example.table"
    private static let fast = VarlinkMethod<Members, [String: String]>("Fast", of: interface)
    private static let feed = VarlinkMethod<Members, [String: String]>("Feed", of: interface, requiresMore: true)

    /// Which answerer each call reached, in order.
    private final class Reached: Sendable {
        private let names = Mutex<[String]>([])
        func append(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }
    private let reached = Reached()

    private func context(more: Bool) -> VarlinkCallContext {
        VarlinkCallContext(
            peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000),
            logger: Logger(label: "test"),
            streaming: more
        ) { _ in }
    }

    /// `Fast` answers on the loop unless asked for `"later"`; `Feed` only streams.
    private func table() -> VarlinkMethods {
        var methods = VarlinkMethods(of: Self.interface)
        methods.answer(
            Self.fast,
            atOnce: { [reached] call, _ in
                guard call.parameterCount == 0 else { return nil }
                reached.append("at once")
                return try VarlinkAnswer(["by": "at once"])
            }
        ) { [reached] _, _ in
            reached.append("handler")
            return try VarlinkAnswer(["by": "handler"])
        }
        methods.on(Self.feed) { [reached] _, _ in
            reached.append("feed")
            return ["by": "feed"]
        }
        return methods
    }

    @Test func aCallIsAnsweredAtOnceWhereItCanAndByItsHandlerOtherwise() async throws {
        let methods = table()
        let atOnce = try await methods.answer(try Self.fast.call([:]), context: context(more: false))
        let later = try await methods.answer(try Self.fast.call(["later": true]), context: context(more: false))
        #expect(try atOnce.decode([String: String].self) == ["by": "at once"])
        #expect(try later.decode([String: String].self) == ["by": "handler"])
        // A streaming call is never answered at once.
        _ = try await methods.answer(try Self.fast.call([:], more: true), context: context(more: true))
        #expect(reached.all == ["at once", "handler", "handler"])
    }

    @Test func aMethodThatOnlyStreamsRefusesACallWithoutMoreBeforeItsHandlerRuns() async throws {
        let methods = table()
        await #expect(throws: VarlinkError.expectedMore) {
            try await methods.answer(try Self.feed.call([:]), context: context(more: false))
        }
        #expect(try methods.answerAtOnce(try Self.feed.call([:]), context: context(more: false)) == nil)
        #expect(reached.all.isEmpty)
        _ = try await methods.answer(try Self.feed.call([:], more: true), context: context(more: true))
        #expect(reached.all == ["feed"])
    }

    @Test func aWrappedTableRunsEachHandlerInsideTheWrapAndLeavesTheLoopsAnswersAlone() async throws {
        let wraps = Mutex(0)
        let methods = table().wrappingHandlers { context, handle in
            wraps.withLock { $0 += 1 }
            return try await handle(context)
        }
        _ = try await methods.answer(try Self.fast.call([:]), context: context(more: false))
        _ = try await methods.answer(try Self.fast.call(["later": true]), context: context(more: false))
        #expect(wraps.withLock { $0 } == 1)
        #expect(reached.all == ["at once", "handler"])
    }

    @Test func aTableRefusesAnotherInterfacesMethod() async {
        // A mistake of the program's own, found as the table is built, not by a caller.
        await #expect(processExitsWith: .failure) {
            var methods = VarlinkMethods(of: "org.example.other")
            methods.on(VarlinkMethod<[String: JSONValue], [String: String]>("Fast", of: "org.example.table")) { _, _ in
                [:]
            }
        }
    }

    @Test func aMethodTheTableLacksIsMethodNotFound() async throws {
        let call = VarlinkCall(method: "\(Self.interface).Fas")
        await #expect(throws: VarlinkError.methodNotFound(call.method)) {
            try await table().answer(call, context: context(more: false))
        }
    }
}

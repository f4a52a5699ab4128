import NIOConcurrencyHelpers

/// What the connections found when the server stopped, as each reports it on its own loop:
/// for the one line the server logs once every connection has ended.
final class StopReport: Sendable {
    /// What a graceful stop found.
    struct Drained: Sendable, Equatable {
        /// Idle connections, closed.
        var idle = 0
        /// Streaming calls, cancelled.
        var streaming = 0
        /// Calls being answered, left to finish.
        var answering = 0
    }

    private struct State {
        var drained = Drained()
        /// What each connection that a hard stop cut off was doing (nil for an idle one).
        var cutOff: [String?] = []
    }

    private let state = NIOLockedValueBox(State())

    /// A connection's report of what a graceful stop asked of it.
    func drained(_ action: ConnectionStateMachine.StopAction) {
        state.withLockedValue { state in
            switch action {
            case .closeNow: state.drained.idle += 1
            case .cancelStreaming: state.drained.streaming += 1
            case .letFinish: state.drained.answering += 1
            case .nothing: break
            }
        }
    }

    /// A connection that closed once a hard stop had begun, with the method of the call it was
    /// answering (nil when idle).
    func cutOff(answering method: String?) {
        state.withLockedValue { $0.cutOff.append(method) }
    }

    /// What the graceful stop found, as reported so far.
    var drainedSoFar: Drained {
        state.withLockedValue { $0.drained }
    }

    /// The connections cut off by a hard stop, by the method each was answering (nil for idle
    /// ones); empties the record.
    func takeCutOff() -> [String?] {
        state.withLockedValue { state in
            defer { state.cutOff = [] }
            return state.cutOff
        }
    }
}

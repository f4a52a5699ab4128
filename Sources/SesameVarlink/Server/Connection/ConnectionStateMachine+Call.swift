/// The call a connection is answering, as the state machine holds it while it is answered.
extension ConnectionStateMachine {
    /// A call being answered: what ends it early, and what its end leads to. (Its flags come
    /// last, to pack into one word: every idle subscriber keeps one.)
    struct Call {
        /// Its method: what a hard stop reports it cut off.
        var method: String
        /// The task answering it off the loop, while there is one.
        var task: Task<Void, Never>? = nil
        /// The stream it goes on through once its handler has left it, until the stream ends.
        var stream: VarlinkReplyStream? = nil
        /// Whether it is `oneway`: its final reply, if any, is then not sent.
        let oneway: Bool
        /// Whether it streams (`more`): such a call has no end of its own, and is cancelled
        /// when the peer hangs up or the server stops.
        let streaming: Bool
        /// The server is stopping: the connection ends once this call is done.
        var isLast = false

        /// Cancels the call wherever it is answered: its task, or the stream it goes on through.
        func cancel() {
            task?.cancel()
            stream?.cancel()
        }

        /// The peer hung up: a streaming call ends, as it has no end of its own; any other call
        /// is left to finish.
        func peerHungUp() {
            guard streaming else { return }
            stream?.hangUp()
            cancel()
        }
    }

    /// What a stop asks of the handler.
    enum StopAction {
        /// Close the connection now, dropping what the peer has not read, after cancelling the
        /// call, if any.
        case closeNow(cancelling: Call?)
        /// Cancel the streaming call; the connection ends once it has.
        case cancelStreaming(Call)
        /// Let the call finish; the connection ends once it has.
        case letFinish
        /// The stop is no news.
        case nothing
    }

    /// What follows a call that is over.
    enum AfterCall {
        /// Serve what waits.
        case serveNext
        /// The server is stopping: end the connection once what was written has been sent.
        case endConnection
    }
}

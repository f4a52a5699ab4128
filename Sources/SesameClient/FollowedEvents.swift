import SesameCore

extension SesameClient {
    /// Events that outlive a connection: subscribes like `events`, and when the connection is
    /// lost (sesamed restarted, or cut this subscriber off as `Lagged`) yields `.reconnecting`,
    /// connects again with back-off (0.1 s, doubling, at most 5 s) and resumes after the last
    /// sequence number seen, so nothing is missed silently: sesamed replays what it kept, or
    /// sends a `.resync` with every account when it no longer has those events. Ends when the
    /// consumer stops, or with an error reconnecting cannot fix (permission, a limit, a filter).
    public static func followEvents(
        socketPath: String? = nil,
        accounts: [String]? = nil,
        kinds: [AuthEvent.Kind]? = nil,
        since: UInt64? = nil
    ) -> AsyncThrowingStream<SubscriptionUpdate, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var follower = Follower(last: since)
                while !Task.isCancelled {
                    do {
                        try await follower.subscribeOnce(socketPath, accounts, kinds, continuation)
                    } catch let error as SesameError where error.isPassing {
                        // Reconnected below.
                    } catch {
                        continuation.finish(throwing: error)
                        return
                    }
                    await follower.pauseBeforeReconnecting(continuation)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Where a followed subscription stands between connections.
    private struct Follower {
        /// The last sequence number seen: what the next subscription resumes after.
        var last: UInt64?
        var delay = Duration.milliseconds(100)
        var announced = false

        /// One connection's subscription, relayed until it ends.
        mutating func subscribeOnce(
            _ socketPath: String?,
            _ accounts: [String]?,
            _ kinds: [AuthEvent.Kind]?,
            _ continuation: AsyncThrowingStream<SubscriptionUpdate, any Error>.Continuation
        ) async throws {
            let client = try await SesameClient.connect(socketPath: socketPath)
            do {
                for try await update in try await client.events(accounts: accounts, kinds: kinds, since: last) {
                    (delay, announced) = (.milliseconds(100), false)
                    last = update.sequence
                    continuation.yield(update)
                }
                await client.close()
            } catch {
                await client.close()
                throw error
            }
        }

        /// Says once per outage that the subscription is being resumed, then waits a little longer each time.
        mutating func pauseBeforeReconnecting(
            _ continuation: AsyncThrowingStream<SubscriptionUpdate, any Error>.Continuation
        ) async {
            if !announced {
                continuation.yield(.reconnecting(after: last))
                announced = true
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }
}

extension SubscriptionUpdate {
    /// The sequence number this update brings the subscriber up to.
    var sequence: UInt64? {
        switch self {
        case .ready(let sequence), .resync(let sequence, _): sequence
        case .event(let event): event.sequence
        case .reconnecting(let after): after
        }
    }
}

extension SesameError {
    /// Whether following events may simply connect again: the connection went (sesamed stopped
    /// or restarted) or this subscriber fell behind and was cut off.
    var isPassing: Bool {
        switch self {
        case .disconnected, .cannotConnect, .busy, .lagged: true
        default: false
        }
    }
}

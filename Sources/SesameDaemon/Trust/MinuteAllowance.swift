import FoundationEssentials

/// Each uid's allowance of something a minute: a bucket of `perMinute`, refilled at that
/// rate. Two are kept: calls that reach a provider (providers count requests per client, and
/// every user of this machine shares sesamed's client there), and changes written to the store
/// that nothing else pays for (each is a durable write, and the disk is everyone's).
struct MinuteAllowance: Sendable {
    private struct Bucket {
        var calls: Double
        var at: Date
    }

    /// Uids tracked before full buckets (which mean nothing) are dropped.
    private static let trackedLimit = 4096
    private var buckets: [UInt32: Bucket] = [:]

    /// Spends one call of `uid`'s allowance of `perMinute` at `now`: nil when there was one,
    /// else how many seconds until there will be.
    mutating func spend(for uid: UInt32, perMinute: Int, at now: Date) -> Int? {
        let capacity = Double(perMinute)
        let perSecond = capacity / 60
        if buckets[uid] == nil, buckets.count >= Self.trackedLimit {
            dropFull(at: now, perSecond: perSecond)
            // Thousands of uids all calling at once: a new one waits for room rather than grow this.
            guard buckets.count < Self.trackedLimit else { return 60 }
        }
        var bucket = buckets[uid] ?? Bucket(calls: capacity, at: now)
        bucket.calls = min(capacity, bucket.calls + max(0, now.timeIntervalSince(bucket.at)) * perSecond)
        bucket.at = now
        defer { buckets[uid] = bucket }
        guard bucket.calls >= 1 else { return Int(((1 - bucket.calls) / perSecond).rounded(.up)) }
        bucket.calls -= 1
        return nil
    }

    /// Forgets the buckets that have refilled: they are what a new one starts as.
    private mutating func dropFull(at now: Date, perSecond: Double) {
        buckets = buckets.filter { _, bucket in
            bucket.calls + now.timeIntervalSince(bucket.at) * perSecond < perSecond * 60
        }
    }
}

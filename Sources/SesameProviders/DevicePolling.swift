/// What a device login's polling tells its caller and asks of it: each poll is a request to
/// the provider, which counts requests per client, and every user of this machine shares
/// sesamed's client there, so a poll is paid for like any other call a user causes.
public struct DevicePolling: Sendable {
    /// Pays for one poll: nil when it may be made now, else how long until it may.
    public typealias Payment = @Sendable () -> Duration?

    /// Hears of trouble at the provider while polling goes on, and of its passing.
    public var onTrouble: DeviceLoginTrouble.Report
    /// Pays for each poll before it is made.
    public var pay: Payment

    /// Polling that tells `onTrouble` and pays each poll with `pay`.
    public init(onTrouble: @escaping DeviceLoginTrouble.Report, pay: @escaping Payment) {
        self.onTrouble = onTrouble
        self.pay = pay
    }

    /// Tells nobody and pays nothing: for callers without a person or an allowance (tests).
    public static let unpaid = DevicePolling(onTrouble: DeviceLoginTrouble.ignored, pay: { nil })
}

/// The version of Sesame that the daemon reports and the tools print.
public enum SesameVersion {
    /// The release this source tree builds.
    public static let current = "0.1.0"
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Lookups in the system's user and group databases (NSS), for names in the config and for the
/// supplementary groups of a caller, which `SO_PEERCRED` does not carry.
public enum UserDatabase {
    /// The uid of the user called `name`, or nil when there is none.
    public static func uid(named name: String) -> UInt32? {
        withPasswd(name: name) { $0.pw_uid }
    }

    /// The gid of the group called `name`, or nil when there is none.
    public static func gid(named name: String) -> UInt32? {
        var group = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
    }

    /// `primaryGID` and every group the user database lists `uid` in. A uid without a user entry
    /// has only its primary group.
    public static func groups(ofUID uid: UInt32, primaryGID: UInt32) -> Set<UInt32> {
        var passwd = Glibc.passwd()
        var result: UnsafeMutablePointer<Glibc.passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &passwd, &buffer, buffer.count, &result) == 0, result != nil, let name = passwd.pw_name
        else {
            return [primaryGID]
        }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primaryGID, &groups, &count) < 0 {
            // Too small; `count` now says how many there are.
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, primaryGID, &groups, &count) >= 0 else { return [primaryGID] }
        }
        return Set(groups.prefix(Int(count))).union([primaryGID])
    }

    private static func withPasswd<T>(name: String, _ body: (Glibc.passwd) -> T) -> T? {
        var passwd = Glibc.passwd()
        var result: UnsafeMutablePointer<Glibc.passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwnam_r(name, &passwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return body(passwd)
    }
}

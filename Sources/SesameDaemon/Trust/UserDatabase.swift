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
        guard withGrowingBuffer({ getgrnam_r(name, &group, $0, $1, &result) }), result != nil else { return nil }
        return group.gr_gid
    }

    /// Runs a `get*_r` lookup with a buffer that doubles while the entry does not fit (ERANGE),
    /// as large groups with many members need. True when the lookup succeeded.
    private static func withGrowingBuffer(_ lookup: (UnsafeMutablePointer<CChar>, Int) -> Int32) -> Bool {
        var size = 16384
        while size <= 16 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            let status = buffer.withUnsafeMutableBufferPointer { lookup($0.baseAddress!, size) }
            if status != ERANGE { return status == 0 }
            size *= 2
        }
        return false
    }

    /// The groups the user database gives `uid`: its login group and every group that lists it
    /// as a member. Empty for a uid without a user entry. The same for every process of the uid,
    /// so callers add the primary group of the process themselves.
    public static func groups(ofUID uid: UInt32) -> Set<UInt32> {
        var passwd = Glibc.passwd()
        var result: UnsafeMutablePointer<Glibc.passwd>?
        var name = ""
        var loginGroup: gid_t = 0
        let found = withGrowingBuffer { buffer, size in
            let status = getpwuid_r(uid, &passwd, buffer, size, &result)
            // The strings point into the buffer, so copy the name while it is alive.
            if status == 0, result != nil, let pointer = passwd.pw_name {
                name = String(cString: pointer)
                loginGroup = passwd.pw_gid
            }
            return status
        }
        guard found, result != nil, !name.isEmpty else { return [] }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, loginGroup, &groups, &count) < 0 {
            // Too small; `count` now says how many there are.
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, loginGroup, &groups, &count) >= 0 else { return [loginGroup] }
        }
        return Set(groups.prefix(Int(count))).union([loginGroup])
    }

    private static func withPasswd<T>(name: String, _ body: (Glibc.passwd) -> T) -> T? {
        var passwd = Glibc.passwd()
        var result: UnsafeMutablePointer<Glibc.passwd>?
        var value: T?
        _ = withGrowingBuffer { buffer, size in
            let status = getpwnam_r(name, &passwd, buffer, size, &result)
            if status == 0, result != nil { value = body(passwd) }
            return status
        }
        return value
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The process's limit on open files, which bounds the connections of all users together.
enum OpenFileLimit {
    /// Raises the soft RLIMIT_NOFILE to the hard limit and returns it: sesamed waits with epoll,
    /// not select, so many descriptors cost it nothing (systemd's advice for such services).
    /// Done once at start-up, by the daemon.
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}

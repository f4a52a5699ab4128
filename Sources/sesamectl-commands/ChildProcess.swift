import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Starts programs that run beside sesamectl (a browser launcher, a login a desktop notice
/// asked for) without taking on its signal handling: every signal at its default and none
/// blocked (sesamectl ignores SIGINT while a login runs, and a thread's mask is the caller's),
/// in a process group of their own. A thread of its own waits for each, so no zombie is left.
enum ChildProcess {
    /// Starts `program` with `arguments` (`arguments[0]` is the name it sees as `argv[0]`) in
    /// this process's environment; its standard streams on /dev/null when `quiet`, else
    /// sesamectl's own. `ended` is called with its wait status once it ends. False when it
    /// could not be started.
    static func spawn(
        _ program: String,
        arguments: [String],
        quiet: Bool,
        ended: @escaping @Sendable (Int32) -> Void = { _ in }
    ) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        var all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP)
        )
        if quiet {
            for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
                let mode = descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", mode, 0)
            }
        } else {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        guard posix_spawn(&pid, program, &actions, &attributes, argv, environ) == 0 else { return false }
        // waitpid blocks: on a thread of Dispatch's, never one of the task pool.
        DispatchQueue.global().async { [pid] in
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            ended(status)
        }
        return true
    }
}

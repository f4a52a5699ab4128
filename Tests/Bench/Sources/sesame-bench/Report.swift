import Foundation

/// The table printed after a run, BENCHMARKS.md, and the broadcast plot.
struct Report {
    let samples: Samples
    let settings: Settings
    let sizes: MessageSizes
    let dbusReplyBytes: Int?
    let command: String
    /// sesamed's size by package, a Markdown table, if measured.
    let sizesByPackage: String?

    /// The table with the targets, then the figures for context.
    var table: String {
        let rows = Row.all(small: settings.small, large: settings.large)
        let context = Row.context(small: settings.small, large: settings.large)
        return ([Row.header] + rows.map { $0.line(samples) } + context.map { $0.line(samples) })
            .joined(separator: "\n")
    }

    /// The machine the run was on: cores, CPU model, kernel.
    static var machine: String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let kernel = (try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "?"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return "nproc \(cores), \(model), Linux \(kernel.trimmingCharacters(in: .whitespacesAndNewlines))"
    }

    /// The line after which BENCHMARKS.md holds sections written by hand (measurements of one
    /// change, profiles), which a new run keeps as they are.
    static let keptSectionsMarker = "<!-- Sections below are written by hand; scripts/bench keeps them. -->"

    /// BENCHMARKS.md: the table, the command, the machine, the date, the plot and what the rows
    /// mean, then whatever `previous` (the file as it was) holds after `keptSectionsMarker`.
    func markdown(plot: String?, previous: String?) -> String {
        guard let previous, let marker = previous.range(of: Self.keptSectionsMarker) else {
            return generated(plot: plot)
        }
        return generated(plot: plot) + "\n" + previous[marker.lowerBound...]
    }

    private func generated(plot: String?) -> String {
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
        let plotLine = plot.map { "\n![One event to N subscribers: time to the last receipt](\($0))\n" } ?? ""
        return """
            # Benchmarks

            Measured by `sesame-bench`; nothing here is asserted by a test. Reproduce with:

            ```sh
            \(command)
            ```

            ## \(date), release build, \(Self.machine)

            Rounds: \(settings.rounds), interleaved (each row for every system before the next row, the order
            rotating each round). Each cell is the median with the rounds' range in parentheses; the ratios
            are medians of the ratios within each round.

            \(table)
            \(plotLine)
            \(packageSection)
            \(notes)
            """
    }

    /// sesamed's stripped size by the package each part came from, as its link map places them.
    private var packageSection: String {
        guard let sizesByPackage else { return "" }
        return """
            ### sesamed's size by package

            What each package puts in the stripped binary: the input sections of lld's link map (`-Map`)
            in the sections kept in the file, summed by the package whose module or archive they came from
            (scripts/lib/size-by-package.py).

            \(sizesByPackage)
            """
    }

    /// What the rows mean and how each is measured.
    private var notes: String {
        let dbusSizes = dbusReplyBytes.map { ", its reply \($0) bytes on the wire" } ?? ""
        return """
            ## What is measured

            - **Systems.** *floor*: `bench-floor`, one thread, epoll, NUL-framed messages, no parsing
              beyond a substring, prepared replies of sesamed's sizes. *dbus-daemon*: a private bus
              (`dbus-daemon --nofork`, limits raised), a libdbus service (`bench-dbus service`) answering
              `GetToken` with a token, and a signal emitted to subscribers with a match rule; the CPU
              figure is the bus's only (the service's is a context row). *sesamed*: the release binary
              as scripts/install builds it (scripts/lib/release-build: the Swift runtime linked in, the
              code laid out in the order scripts/lib/order-sesamed records) with a config in a temporary directory, limits raised for 10,000 subscribers, the end-to-end
              tests' offline provider, and one account imported with `ImportTokens`.
            - **Sizes.** GetToken call \(sizes.call) bytes, reply \(sizes.reply) bytes, event \(sizes.event) bytes
              (sesamed's own, each followed by the NUL that ends a Varlink message); the floor sends exactly these sizes, D-Bus about the same
              (the token and the signal are padded to them\(dbusSizes)).
            - **Clients** are C (`bench-client`, `bench-dbus`): one thread per connection, the request
              prepared once, replies only framed, never parsed. D-Bus clients connect with libdbus
              (authentication, Hello, AddMatch) and then write and read the same way. Server CPU is
              utime+stime from `/proc/PID/stat` across the measured window (\(settings.seconds) s per run,
              after every client has connected and made 50 calls).
            - **Connect + call + close**: every call on a new connection (not measured for D-Bus: a bus
              connection needs authentication and Hello).
            - **`sesamectl token`**: the whole process, spawn to exit, \(settings.clientRuns) runs in a row per
              round (median), asking the sesamed above for its account's token; its floor column is a
              plain C program making the same call on the same sesamed and printing the reply
              (scripts/lib/oneshot-client.c, built by the system's C compiler with nothing else linked).
              `--version` is sesamectl's start-up and exit alone (it answers that itself, as it
              does `token`; other commands start sesamectl-commands in its place).
            - **Stripped sizes**: each program as scripts/package ships it (`strip`): sesamed beside the
              floor server and dbus-daemon; sesamectl beside the C one-shot client and dbus-send; and
              sesamectl-commands, which sesamectl runs in its place for every command but `token`, and
              which git-credential-sesame and docker-credential-sesame are links to.
            - **`git-credential-sesame get`**: the whole process, spawn to exit, as git runs it: a link
              to sesamectl-commands under the helper's name, `--account` given, git's request on stdin.
            - **Package**: the .deb scripts/package builds from these binaries (xz), and its
              Installed-Size (every file it installs).
            - **Events**: \(subscriberProcesses) subscriber processes (one per core: more made the floor
              slower), epoll over their connections; one event
              at a time (\(settings.events) per round, median), timed from just before the trigger is written to
              the last subscriber's receipt (CLOCK_MONOTONIC in every process). The trigger is a real change:
              sesamed renews the account with `ImportTokens` (persisted, then announced as `loggedIn`).
              Deliveries/s: \(settings.burst) triggers written back to back, subscribers × \(settings.burst) / time
              to the last receipt of the last.
              The \(Row.count(settings.small))- and \(Row.count(settings.large))-subscriber runs are made on a freshly
              started instance of each system (sesamed: a second one, with its own store).
            - **Memory per idle subscriber**: in that fresh instance, the daemon's VmRSS after every subscriber
              has connected and subscribed (and half a second more), less before, divided by their number.
              Kernel: the change of Slab in /proc/meminfo over the same time, system-wide (both ends of
              every socket, the clients' epoll), so it is noisy when other work runs.
            - **exec → ready**: from spawning to READY=1 on a NOTIFY_SOCKET (sesamed, floor), or to the
              address line of `--print-address` (dbus-daemon); idle RSS one second later.
            - **Persisted change**: `ImportTokens` renewing an account, end to end, \(settings.changes) calls per
              round on one connection: with 1,000 accounts in the store (a second sesamed, its store
              written with `EncryptedStore` before it starts), and with one. Its floor column is the disk's
              own floor for making one change durable: a record the size of one sealed account appended
              to a file in the same directory and fdatasync'd, in the same round. (sesamed also records
              the sequence mark, a small file of its own, durably.)
            - **First to last receipt**: the same events, timed from the first subscriber's receipt instead
              of the trigger, so without the work before the fan-out (for sesamed: the persisted change).
            - The floor server and the one-shot client are built by the system's C compiler
              (scripts/bench), with nothing linked in but libc: SwiftPM would link the Swift runtime
              into them. `bench-client` and `bench-dbus`, which drive the load, are SwiftPM's.
              dbus-daemon and dbus-send link libdbus dynamically, which their sizes leave out.

            """
    }

    /// Writes the plot of the broadcast time against subscribers as a PNG with gnuplot; false if
    /// gnuplot is missing or fails.
    func plot(to path: String, workDirectory: String) -> Bool {
        let data = settings.subscriberCounts.map { count in
            let values =
                SystemName.allCases.map { samples.median(.broadcast(subscribers: count), $0) ?? .nan }
                + [samples.median(.spread(subscribers: count), .sesame) ?? .nan]
            return "\(count) " + values.map { String(format: "%.4f", $0) }.joined(separator: " ")
        }
        let dataPath = workDirectory + "/broadcast.dat"
        let script = """
            set terminal pngcairo size 900,560 font "sans,11"
            set output '\(path)'
            set title "One event to N subscribers: time to the last receipt (median of \(settings.rounds) rounds)"
            set xlabel "subscribers"
            set ylabel "milliseconds"
            set logscale xy
            set grid
            set key left top
            plot '\(dataPath)' using 1:2 with linespoints lw 2 title 'floor (C epoll)', \
                 '' using 1:3 with linespoints lw 2 title 'dbus-daemon + libdbus', \
                 '' using 1:4 with linespoints lw 2 title 'sesamed', \
                 '' using 1:5 with linespoints lw 1 dt 2 title 'sesamed, first to last receipt (no persisted change)'

            """
        do {
            try (data.joined(separator: "\n") + "\n").write(toFile: dataPath, atomically: true, encoding: .utf8)
            try script.write(toFile: workDirectory + "/broadcast.gp", atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/gnuplot")
            process.arguments = [workDirectory + "/broadcast.gp"]
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        } catch {
            return false
        }
    }
}

// A reproducer of a Swift toolchain fault (seen with Swift 6.3.1 on Linux x86_64), kept because
// sesamed's release build crashed on it. In an optimized build, binding a task-local whose type
// is a function (`@TaskLocal static var f: (@Sendable () async -> Void)?`, optional or not, sync
// or async) with `withValue` asks the runtime for the value's type metadata by a mangled name
// the runtime cannot read: the name is of the lowered, substituted function type (`...Ise ghHnr`
// with `~Copyable`/`~Escapable` requirements), `swift_getTypeByMangledNameInContext` returns
// null ("failed type lookup ... TypeDecoder.h: Node kind 124 - unexpected kind" with
// SWIFT_DEBUG_FAILED_TYPE_LOOKUP=1), and `swift_task_localValuePush` dereferences it (SIGSEGV).
// The debug build asks by the formal type and works; the static and the shared runtime fail alike.
// A task-local of a nominal type (a struct, an optional struct, an array) is not affected.
//
// So Sesame keeps no function in a task-local (Tests/EndToEnd/test_release_build.py checks the
// sources), and the end-to-end suite runs the release build. Build and run:
//   swift build -c release --product repro-task-local-function
//   .build/release/repro-task-local-function function   # crashes where the fault is
//   .build/release/repro-task-local-function nominal    # the pattern Sesame uses: prints "ok"

/// The task-locals of both kinds.
enum Bound {
    @TaskLocal static var function: (@Sendable (String) async -> Void)?
    @TaskLocal static var nominal: Box?
}

/// A function wrapped in a struct: the runtime finds a nominal type's metadata by its name.
struct Box: Sendable {
    let call: @Sendable (String) async -> Void
}

/// Made out of line so that the optimizer cannot fold the value into the binding. The
/// reproducer is a command of its own: what it prints is its result, so `print` is right here.
@inline(never)
func reporter() -> @Sendable (String) async -> Void {
    { message in print(message) }
}

/// An actor hop around the binding, as a Varlink call's handler has.
actor Caller {
    func bindFunction() async {
        await Bound.$function.withValue(reporter()) { await Bound.function?("ok") }
    }

    func bindNominal() async {
        await Bound.$nominal.withValue(Box(call: reporter())) { await Bound.nominal?.call("ok") }
    }
}

switch CommandLine.arguments.dropFirst().first {
case "function": await Caller().bindFunction()
case "nominal": await Caller().bindNominal()
default: print("usage: repro-task-local-function function|nominal")
}

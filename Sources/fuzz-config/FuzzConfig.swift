import SesameDaemon
import SesameFuzzing

/// The built-in configuration a file is read onto, as `sesamed` starts with it.
private let base = DaemonConfiguration.defaults(environment: [:], uid: 0)

/// Reads the input as `sesamed.toml` or as a `providers.d` file (the first byte chooses), the way
/// the daemon reads them at start-up and on reload: text that is not UTF-8 is refused before either.
func fuzzConfig(_ buffer: UnsafeRawBufferPointer) {
    var input = FuzzInput(buffer)
    let asProviderFile = input.byte() & 1 == 1
    guard let text = String(validating: input.remaining, as: UTF8.self) else { return }
    do {
        if asProviderFile {
            _ = try ProviderFiles.parse(text, path: "fuzz.toml", defaultName: "fuzz", credentialsDirectory: nil)
        } else {
            _ = try ConfigurationFile.parse(text, path: "sesamed.toml", onto: base)
        }
    } catch {
        // Every refusal must be describable without crashing: it is what the administrator reads.
        _ = "\(error)"
    }
}

/// Runs the target under libFuzzer (scripts/fuzz) or over corpus files.
@main
enum FuzzConfigMain {
    static func main() {
        FuzzMain.run { data, size in
            fuzzConfig(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    }
}

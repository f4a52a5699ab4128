import SesameCredentialHelper

/// The programs sesamectl-commands is, chosen by the name it was started under (`argv[0]`), as
/// busybox and systemd's tools do: the credential helpers and sesame-notify are links to it under the names git and
/// docker look for, so they cost no more to install than the link.
enum ProgramName: Equatable {
    /// `sesamectl`'s every command, under any name but the helpers'.
    case sesamectl
    /// git's credential helper, `git-credential-sesame`.
    case gitCredentialHelper
    /// docker's credential helper, `docker-credential-sesame`.
    case dockerCredentialHelper
    /// The desktop notices, `sesame-notify`.
    case desktopNotifier

    /// The program the name `argument` (as `argv[0]` holds it: a path, or a bare name) asks for.
    init(argument: String) {
        switch argument.split(separator: "/").last ?? "" {
        case "git-credential-sesame": self = .gitCredentialHelper
        case "docker-credential-sesame": self = .dockerCredentialHelper
        case "sesame-notify": self = .desktopNotifier
        default: self = .sesamectl
        }
    }
}

/// Runs the program this was started as.
@main
enum SesamectlCommands {
    static func main() async {
        switch ProgramName(argument: CommandLine.arguments.first ?? "") {
        case .sesamectl: await Sesamectl.main()
        case .gitCredentialHelper: await GitCredentialSesame.main()
        case .dockerCredentialHelper: await DockerCredentialSesame.main()
        case .desktopNotifier: await SesameNotify.main()
        }
    }
}

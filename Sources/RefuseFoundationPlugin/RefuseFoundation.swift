import Foundation
import PackagePlugin

/// Fails the build of the target that uses this plugin, naming the line, when any of its Swift
/// files imports Foundation (see sesame-foundation-check).
@main
struct RefuseFoundation: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let sources: [URL] = (target.sourceModule?.sourceFiles(withSuffix: "swift")).map { $0.map(\.url) } ?? []
        let output = context.pluginWorkDirectoryURL.appending(path: "\(target.name)-FoundationChecked.swift")
        return [
            .buildCommand(
                displayName: "Checking that \(target.name) imports no Foundation",
                executable: try context.tool(named: "sesame-foundation-check").url,
                arguments: [target.name, output.path] + sources.map { $0.path },
                inputFiles: sources,
                outputFiles: [output]
            )
        ]
    }
}

import Foundation
import PackagePlugin

/// Builds the interface descriptions of interfaces/*.varlink into the target that uses this plugin.
@main
struct EmbedInterfaces: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "interfaces")
        let inputs = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "varlink" }
            .sorted { $0.path < $1.path }
        let output = context.pluginWorkDirectoryURL.appending(path: "InterfaceDescriptions.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) Varlink interface descriptions",
                executable: try context.tool(named: "sesame-interface-embedder").url,
                arguments: [output.path] + inputs.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}

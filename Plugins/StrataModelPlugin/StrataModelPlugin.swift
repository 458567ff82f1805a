import Foundation
import PackagePlugin

/// The build-tool plugin that generates typed Swift for every Strata model in a target's sources,
/// as Xcode's Core Data code generation does for an app: nothing generated is checked in, and a
/// change to a model generates again on the next build.
///
/// A model is a file or folder of the target whose name ends in
/// - `.xcdatamodel`: a Core Data model folder as Xcode saves it;
/// - `.xcdatamodeld`: a versioned Core Data model (its current version is generated);
/// - `.strata.json`: Strata's own JSON model format (a plain `.json` file is left alone: it may be
///   anything, a resource or a fixture).
///
/// Each model gets one build command: `strata-codegen --model MODEL --output DIR`, where DIR is a
/// folder of its own in the plugin's work directory and the output is one file,
/// `<model file name without its extension>+Generated.swift`, compiled into the target. The
/// command's inputs are every file of the model (all of a folder's files, at any depth), so that
/// editing a model or adding a version to it runs the command again.
@main struct StrataModelPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        guard let module = target as? SourceModuleTarget else { return [] }
        let models = try ModelFile.models(among: module.sourceFiles.map(\.url))
        guard !models.isEmpty else { return [] }
        let tool = try context.tool(named: "strata-codegen")
        return models.map { model in
            let output = context.pluginWorkDirectoryURL.appending(path: model.outputFolderName)
            return .buildCommand(
                displayName: "Generating typed Swift for \(model.url.lastPathComponent)",
                executable: tool.url,
                arguments: ["--model", model.url.path, "--output", output.path],
                inputFiles: model.inputFiles(),
                outputFiles: [output.appending(path: model.generatedFileName)])
        }
    }
}

/// A model file or folder among a target's sources.
struct ModelFile {
    /// The name endings the plugin generates for.
    static let suffixes = [".xcdatamodeld", ".xcdatamodel", ".strata.json"]

    /// Whether `url` names a model the plugin generates for.
    static func isModel(_ url: URL) -> Bool {
        let name = url.lastPathComponent
        return suffixes.contains { name.hasSuffix($0) && name.count > $0.count }
    }

    /// The models among a target's files, in path order.
    /// - Throws: ``PluginError`` when two of them would generate files of the same name (a module's
    ///   sources need distinct file names, and their types would collide as well).
    static func models(among files: [URL]) throws -> [ModelFile] {
        let models = files.filter(isModel).sorted { $0.path < $1.path }.map(ModelFile.init)
        var seen: [String: URL] = [:]
        for model in models {
            if let other = seen[model.generatedFileName] {
                throw PluginError(
                    "\(other.path) and \(model.url.path) would both generate \(model.generatedFileName): "
                        + "rename one, or move it to a target of its own")
            }
            seen[model.generatedFileName] = model.url
        }
        return models
    }

    /// The model's file or folder.
    let url: URL

    /// The folder of the plugin's work directory the model's code is generated into.
    var outputFolderName: String { url.lastPathComponent }

    /// The Swift file `strata-codegen` writes for the model: the model's file name without its
    /// extension, then `+Generated.swift` (`Library.xcdatamodel` → `Library+Generated.swift`,
    /// `Library.strata.json` → `Library.strata+Generated.swift`), as `SwiftGenerator.fileName(forModelAt:)`
    /// names it.
    var generatedFileName: String { "\(url.deletingPathExtension().lastPathComponent)+Generated.swift" }

    /// Every file the command reads: the model itself, or a model folder and every regular file under it
    /// (hidden ones too: `.xccurrentversion` names a versioned model's current version; a symbolic
    /// link to a folder is followed, as the generator follows it).
    func inputFiles() -> [URL] {
        let resolved = url.resolvingSymlinksInPath()
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved.path, isDirectory: &isFolder), isFolder.boolValue else {
            return [url]
        }
        guard
            let walker = FileManager.default.enumerator(
                at: resolved, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [url] }
        var files: [URL] = [url]
        for case let file as URL in walker
        where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
            files.append(file)
        }
        return files
    }
}

/// Why the plugin could not plan a target's build.
struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

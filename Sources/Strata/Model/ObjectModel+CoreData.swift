import Foundation

extension ObjectModel {
    /// Loads a Core Data `.xcdatamodel` folder (its `contents` XML, as Xcode writes it).
    ///
    /// The model's name is the folder's name without its extension; its version is the `<model>`
    /// element's `userDefinedModelVersionIdentifier`, or nil. Core Data's spellings map to ours:
    /// `optional` is false when absent (Xcode writes `optional="YES"`), `minValueString` and
    /// `maxValueString` are lengths for String and Binary attributes and bounds otherwise, dates
    /// may be written as seconds since 2001 or RFC 3339, `renamingIdentifier` is `renamedFrom`, and
    /// a fetch index keeps its name. Of `userInfo`, only the entity's `resource` entry is read: it
    /// sets the entity's REST ``EntityDescription/resource``. Layout `elements`, class names, code
    /// generation settings and unknown attributes are ignored; transient properties are skipped.
    /// - Throws: ``ModelError``: `.unreadable` when the folder or its `contents` cannot be read,
    ///   `.malformed` for XML that is not well-formed, `.invalid` listing every problem (an unknown
    ///   `attributeType` is an issue of code `.unknownType`).
    public static func loadCoreDataModel(at url: URL) throws(ModelError) -> ObjectModel {
        guard isFolder(url) else {
            throw ModelError(.unreadable, file: url.path, issues: [ModelIssue(.missingValue, "no such folder")])
        }
        let contents = url.appendingPathComponent("contents")
        if !FileManager.default.fileExists(atPath: contents.path),
            FileManager.default.fileExists(atPath: url.appendingPathComponent("elements").path)
        {
            throw ModelError(
                .unreadable, file: url.path,
                issues: [
                    ModelIssue(
                        .unsupported,
                        "this model was saved by Xcode 3 in its binary 'elements' format, which Strata does not read; open it in a current Xcode and save it (Xcode writes the XML 'contents' file then)"
                    )
                ])
        }
        let data: Data
        do {
            data = try Data(contentsOf: contents)
        } catch {
            throw ModelError(
                .unreadable, file: contents.path,
                issues: [ModelIssue(.missingValue, "cannot read the model's contents: \(error.localizedDescription)")])
        }
        return try loadCoreDataContents(data, file: contents.path, name: url.deletingPathExtension().lastPathComponent)
    }

    /// Loads a model from the XML of a `.xcdatamodel`'s `contents` file (which may also be kept
    /// on its own, as `model.xml` say), named `name`.
    /// - Throws: ``ModelError`` as ``loadCoreDataModel(at:)``.
    public static func loadCoreDataContents(_ data: Data, file: String, name: String) throws(ModelError) -> ObjectModel
    {
        let root = try ModelXMLNode.parse(data, file: file)
        var reader = CoreDataModelReader()
        let parsed = reader.readModel(root)
        guard reader.issues.isEmpty else { throw ModelError(.invalid, file: file, issues: reader.issues) }
        do {
            return try ObjectModel(
                name: name, version: parsed.version, entities: parsed.entities, configurations: parsed.configurations,
                fetchRequestTemplates: parsed.fetchRequestTemplates, warnings: reader.warnings)
        } catch {
            throw ModelError(error.kind, file: file, issues: error.issues)
        }
    }

    /// Loads the current version of a Core Data `.xcdatamodeld` folder: the `.xcdatamodel` its
    /// `.xccurrentversion` names. When that file is missing, empty or names no version of the bundle,
    /// the newest version is taken — by `userDefinedModelVersionIdentifier` when every version
    /// declares one that reads as a number, else by name with numbers compared by value — with a
    /// warning saying which (one version alone needs no warning).
    /// - Throws: ``ModelError``.
    public static func loadCoreDataModelBundle(at url: URL) throws(ModelError) -> ObjectModel {
        let versions = try coreDataVersionFolders(in: url)
        let marker = url.appendingPathComponent(".xccurrentversion")
        let choices = versions.map(\.lastPathComponent).joined(separator: ", ")
        var reason: String?
        if FileManager.default.fileExists(atPath: marker.path) {
            if var current = currentVersionName(in: marker) {
                if !current.hasSuffix(".xcdatamodel") { current += ".xcdatamodel" }
                if let version = versions.first(where: { $0.lastPathComponent == current }) {
                    return try loadCoreDataModel(at: version)
                }
                reason = ".xccurrentversion names '\(current)', which is not in the bundle"
            } else {
                reason = ".xccurrentversion names no version"
            }
        } else if versions.count > 1 {
            reason = "there is no .xccurrentversion"
        }
        let loadable = versions.filter {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("contents").path)
        }
        guard let newest = try newestVersion(of: loadable.isEmpty ? versions : loadable) else {
            return try loadCoreDataModel(at: versions[0])
        }
        guard let reason else { return newest.model }
        return try newest.model.adding(
            warning: ModelIssue(
                .missingValue,
                "\(reason) (versions: \(choices)): using the newest, \(newest.url.lastPathComponent)"))
    }

    /// The newest of `versions`: by version identifier when all have numeric ones, else by name.
    private static func newestVersion(of versions: [URL]) throws(ModelError) -> (url: URL, model: ObjectModel)? {
        var loaded: [(url: URL, model: ObjectModel)] = []
        for version in versions { loaded.append((version, try loadCoreDataModel(at: version))) }
        let numbers = loaded.map { $0.model.version.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } }
        if numbers.allSatisfy({ $0 != nil }), let best = zip(loaded, numbers).max(by: { $0.1! < $1.1! }) {
            return best.0
        }
        return loaded.last
    }

    /// Loads every version of a Core Data `.xcdatamodeld` folder, ordered by name with numbers
    /// compared by value (`Library`, `Library 2`, …, `Library 10`). Versions saved by Xcode 3 in
    /// the binary `elements` format are left out (they can only be migrated from by a current
    /// Xcode).
    /// - Throws: ``ModelError`` for the first version that does not load.
    public static func loadCoreDataModelVersions(at url: URL) throws(ModelError) -> [ObjectModel] {
        try coreDataVersionFolders(in: url).filter {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("contents").path)
        }.map { (version) throws(ModelError) in try loadCoreDataModel(at: version) }
    }

    private static func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The `.xcdatamodel` folders of a bundle, ordered by name.
    private static func coreDataVersionFolders(in url: URL) throws(ModelError) -> [URL] {
        let names: [String]
        do {
            guard isFolder(url) else { throw CocoaError(.fileNoSuchFile) }
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            throw ModelError(.unreadable, file: url.path, issues: [ModelIssue(.missingValue, "no such folder")])
        }
        let versions = names.filter { $0.hasSuffix(".xcdatamodel") }.sorted { lhs, rhs in
            let left = String(lhs.dropLast(".xcdatamodel".count))
            let right = String(rhs.dropLast(".xcdatamodel".count))
            return left.compare(right, options: [.numeric]) == .orderedAscending
        }
        guard !versions.isEmpty else {
            throw ModelError(
                .unreadable, file: url.path, issues: [ModelIssue(.missingValue, "the bundle holds no .xcdatamodel")])
        }
        return versions.map { url.appendingPathComponent($0) }
    }

    /// The `_XCCurrentVersionName` of a `.xccurrentversion` property list; nil when it has none
    /// (Xcode writes an empty `<dict/>` for some bundles) or cannot be read.
    private static func currentVersionName(in marker: URL) -> String? {
        struct CurrentVersion: Decodable {
            var name: String
            enum CodingKeys: String, CodingKey { case name = "_XCCurrentVersionName" }
        }
        guard let data = try? Data(contentsOf: marker),
            let name = try? PropertyListDecoder().decode(CurrentVersion.self, from: data).name, !name.isEmpty
        else { return nil }
        return name
    }
}

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
        let data: Data
        do {
            data = try Data(contentsOf: contents)
        } catch {
            throw ModelError(
                .unreadable, file: contents.path,
                issues: [ModelIssue(.missingValue, "cannot read the model's contents: \(error.localizedDescription)")])
        }
        let root = try ModelXMLNode.parse(data, file: contents.path)
        var reader = CoreDataModelReader()
        let parsed = reader.readModel(root)
        guard reader.issues.isEmpty else { throw ModelError(.invalid, file: contents.path, issues: reader.issues) }
        do {
            return try ObjectModel(
                name: url.deletingPathExtension().lastPathComponent, version: parsed.version,
                entities: parsed.entities, configurations: parsed.configurations)
        } catch {
            throw ModelError(error.kind, file: contents.path, issues: error.issues)
        }
    }

    /// Loads the current version of a Core Data `.xcdatamodeld` folder: the `.xcdatamodel` its
    /// `.xccurrentversion` names, or its only version when that file is missing.
    /// - Throws: ``ModelError``; when the current version cannot be told, the error names the choices.
    public static func loadCoreDataModelBundle(at url: URL) throws(ModelError) -> ObjectModel {
        let versions = try coreDataVersionFolders(in: url)
        let marker = url.appendingPathComponent(".xccurrentversion")
        let choices = versions.map(\.lastPathComponent).joined(separator: ", ")
        guard FileManager.default.fileExists(atPath: marker.path) else {
            guard versions.count == 1 else {
                throw ModelError(
                    .invalid, file: url.path,
                    issues: [
                        ModelIssue(
                            .missingValue, "there is no .xccurrentversion to choose among the versions: \(choices)")
                    ])
            }
            return try loadCoreDataModel(at: versions[0])
        }
        var current = try currentVersionName(in: marker)
        if !current.hasSuffix(".xcdatamodel") { current += ".xcdatamodel" }
        guard let version = versions.first(where: { $0.lastPathComponent == current }) else {
            throw ModelError(
                .unreadable, file: marker.path,
                issues: [
                    ModelIssue(
                        .invalidValue, "the current version '\(current)' is not in the bundle (versions: \(choices))")
                ])
        }
        return try loadCoreDataModel(at: version)
    }

    /// Loads every version of a Core Data `.xcdatamodeld` folder, ordered by name with numbers
    /// compared by value (`Library`, `Library 2`, …, `Library 10`).
    /// - Throws: ``ModelError`` for the first version that does not load.
    public static func loadCoreDataModelVersions(at url: URL) throws(ModelError) -> [ObjectModel] {
        try coreDataVersionFolders(in: url).map { (version) throws(ModelError) in try loadCoreDataModel(at: version) }
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

    /// The `_XCCurrentVersionName` of a `.xccurrentversion` property list.
    private static func currentVersionName(in marker: URL) throws(ModelError) -> String {
        struct CurrentVersion: Decodable {
            var name: String
            enum CodingKeys: String, CodingKey { case name = "_XCCurrentVersionName" }
        }
        let data: Data
        do {
            data = try Data(contentsOf: marker)
        } catch {
            throw ModelError(
                .unreadable, file: marker.path, issues: [ModelIssue(.missingValue, error.localizedDescription)])
        }
        do {
            return try PropertyListDecoder().decode(CurrentVersion.self, from: data).name
        } catch {
            throw ModelError(
                .malformed, file: marker.path,
                issues: [ModelIssue(.invalidValue, "not a property list with an _XCCurrentVersionName string")])
        }
    }
}

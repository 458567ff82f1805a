import Foundation

extension ObjectModel {
    /// Loads a model file: our JSON format (`.json`), a Core Data `.xcdatamodel` folder, a
    /// `.xcdatamodeld` folder (its current version), or the XML of a `.xcdatamodel`'s `contents`
    /// kept as a file of its own (any file that starts with `<`).
    /// - Throws: ``ModelError``.
    public static func load(contentsOf url: URL) throws(ModelError) -> ObjectModel {
        switch url.pathExtension.lowercased() {
        case "xcdatamodel": return try loadCoreDataModel(at: url)
        case "xcdatamodeld": return try loadCoreDataModelBundle(at: url)
        default:
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw ModelError(
                    .unreadable, file: url.path,
                    issues: [ModelIssue(.invalidValue, "cannot read the file: \(error.localizedDescription)")])
            }
            // White space and a byte order mark may come first.
            if data.drop(while: { [0x20, 0x09, 0x0D, 0x0A, 0xEF, 0xBB, 0xBF].contains($0) }).first == UInt8(ascii: "<")
            {
                return try loadCoreDataContents(
                    data, file: url.path, name: url.deletingPathExtension().lastPathComponent)
            }
            return try load(json: data, file: url.path)
        }
    }

    /// Loads several model files and merges them into one model.
    public static func load(contentsOf urls: [URL]) throws(ModelError) -> ObjectModel {
        var models: [ObjectModel] = []
        for url in urls { models.append(try load(contentsOf: url)) }
        return try merged(models)
    }

    /// Merges models into one: entities are concatenated (a name declared twice is an error) and
    /// configurations of the same name are united.
    /// - Throws: ``ModelError`` of kind `.invalid`.
    public static func merged(_ models: [ObjectModel]) throws(ModelError) -> ObjectModel {
        guard models.count != 1 else { return models[0] }
        var configurations: [ConfigurationDescription] = []
        for configuration in models.flatMap(\.configurations) {
            if let index = configurations.firstIndex(where: { $0.name == configuration.name }) {
                configurations[index].entities += configuration.entities.filter {
                    !configurations[index].entities.contains($0)
                }
            } else {
                configurations.append(configuration)
            }
        }
        return try ObjectModel(
            name: models.map(\.name).joined(separator: "+"),
            version: models.compactMap(\.version).joined(separator: "+"),
            entities: models.flatMap(\.entities), configurations: configurations,
            fetchRequestTemplates: models.flatMap(\.fetchRequestTemplates),
            warnings: models.flatMap(\.sourceWarnings))
    }
}

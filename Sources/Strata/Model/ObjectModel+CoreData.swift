import Foundation

extension ObjectModel {
    /// Loads a Core Data `.xcdatamodel` folder (its `contents` XML).
    public static func loadCoreDataModel(at url: URL) throws(ModelError) -> ObjectModel {
        throw ModelError(.unreadable, file: url.path, issues: [ModelIssue(.unsupported, "Core Data models are not read yet")])
    }

    /// Loads the current version of a Core Data `.xcdatamodeld` folder.
    public static func loadCoreDataModelBundle(at url: URL) throws(ModelError) -> ObjectModel {
        throw ModelError(.unreadable, file: url.path, issues: [ModelIssue(.unsupported, "Core Data models are not read yet")])
    }
}

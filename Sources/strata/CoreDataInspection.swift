import Foundation
import Strata
import StrataCLI

/// The versions of a model to identify a Core Data store's writer among: every version of an
/// `.xcdatamodeld`, else the one model the paths make.
func coreDataVersions(_ paths: [String]) throws(ModelError) -> [ObjectModel] {
    if paths.count == 1, URL(fileURLWithPath: paths[0]).pathExtension.lowercased() == "xcdatamodeld" {
        return try ObjectModel.loadCoreDataModelVersions(at: URL(fileURLWithPath: paths[0]))
    }
    return [try loadModel(paths)]
}

/// `strata inspect` of a store Core Data wrote.
enum CoreDataInspection {
    static func run(_ file: CoreDataStoreFile, modelPaths: [String], sourceVersion: String?) -> Int32 {
        print("Core Data store \(file.url.path)")
        print("  uuid           \(file.identifier)")
        print(
            "  written by     Core Data framework \(file.frameworkVersion.map(String.init) ?? "?"), store type \(file.storeType ?? "?")"
        )
        print("  version ids    \(file.versionIdentifiers.map { "'\($0)'" }.joined(separator: ", "))")
        if !file.otherMetadataKeys.isEmpty {
            print("  app metadata   \(file.otherMetadataKeys.joined(separator: ", ")) (values not shown)")
        }
        let counts: [String: Int]
        do {
            counts = try file.rowCounts()
        } catch {
            printError("strata inspect: \(error)")
            return 1
        }
        print("  entities (Z_ENT, objects):")
        let width = file.entities.map(\.name.count).max() ?? 0
        for entity in file.entities {
            let padded = entity.name + String(repeating: " ", count: width - entity.name.count)
            let parent = file.entity(number: entity.parent).map { "  parent \($0.name)" } ?? ""
            print("    \(padded)  \(entity.number)  \(counts[entity.name] ?? 0) objects\(parent)")
        }
        let joins = file.tables.filter { $0.hasPrefix("Z_") && $0.dropFirst(2).first?.isNumber == true }
        if !joins.isEmpty {
            print("  join tables:")
            for table in joins { print("    \(table)  \(file.joinRowCount(table)) pairs") }
        }
        guard !modelPaths.isEmpty else { return 0 }
        let versions: [ObjectModel]
        do {
            versions = try coreDataVersions(modelPaths)
        } catch {
            printError("strata inspect: \(error)")
            return 1
        }
        do {
            let match = try file.identifyVersion(among: versions, chosen: sourceVersion)
            print(
                "written by model version \(match.model.name)\(match.model.version.map { " (\($0))" } ?? ""): \(match.reason)"
            )
            return 0
        } catch {
            print("written by model version: unknown; \(error.message)")
            return 2
        }
    }
}

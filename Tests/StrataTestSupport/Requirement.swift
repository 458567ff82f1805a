import Foundation
import Strata

/// Something tests need from the machine that the repository cannot carry (the Core Data
/// material, a PostgreSQL cluster). Present, the tests run. Absent, under `CI=true` they still run
/// and fail at ``check()`` with what is missing and where it was looked for, so CI cannot go green
/// without them; elsewhere they are skipped, and the skip is printed with what to provide.
public struct Requirement: Sendable {
    /// What is needed, in a few words ("Core Data material").
    public let name: String
    /// What is missing, where it was looked for and what to provide; nil when it is there.
    public let missing: String?

    /// Whether the run is a CI run (`CI=true` in the environment), where nothing is skipped.
    public static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// A requirement named `name`, met when `missing` is nil.
    public init(_ name: String, missing: String?) {
        self.name = name
        self.missing = missing
    }

    /// Whether the tests that need it run: when it is there, and always under CI (where they then
    /// fail). A skip is announced on standard error, once per requirement.
    public var runs: Bool {
        guard let missing, !Self.inCI else { return true }
        Self.announced.withLock { names in
            guard names.insert(name).inserted else { return }
            FileHandle.standardError.write(
                Data("\n*** SKIPPED: the tests that need \(name): \(missing) (under CI=true this fails) ***\n\n".utf8))
        }
        return false
    }

    /// Why the tests that need it are skipped, for the skip's comment.
    public var skipComment: String { "needs \(name): \(missing ?? "")" }

    /// Throws what is missing when it is not there (under CI this is the test's failure).
    public func check() throws {
        if let missing { throw RequirementError(description: "\(name) is missing: \(missing)") }
    }

    private static let announced = Locked<Set<String>>([])
}

/// A requirement that is not met, with what to provide.
public struct RequirementError: Error, CustomStringConvertible {
    /// What is missing, where it was looked for, and what to provide.
    public var description: String
}

/// The real Core Data models and stores the real-material suites read (`models/` and `stores/`,
/// with `SOURCES.md` naming each file's origin and licence). They are not part of the repository:
/// they live in `../shared/coredata` beside the repository root, or in the folder
/// `STRATA_COREDATA_MATERIAL` names.
public enum CoreDataMaterial {
    /// The repository root, from this file's place in it (`Tests/StrataTestSupport/`).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The material's folder.
    public static let folder: URL = {
        if let named = ProcessInfo.processInfo.environment["STRATA_COREDATA_MATERIAL"], !named.isEmpty {
            return URL(fileURLWithPath: named).standardizedFileURL
        }
        return repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/coredata")
            .standardizedFileURL
    }()

    /// The folder of the models that come without a store.
    public static var models: URL { folder.appendingPathComponent("models") }
    /// The folder of the stores (each beside its model).
    public static var stores: URL { folder.appendingPathComponent("stores") }
    /// The folder of the mapping models (each beside the model bundle it maps, with its stores).
    public static var mappings: URL { folder.appendingPathComponent("mapping") }

    /// The material, or what is missing.
    public static let requirement: Requirement = {
        var isFolder: ObjCBool = false
        let present = [models, stores].allSatisfy {
            FileManager.default.fileExists(atPath: $0.path, isDirectory: &isFolder) && isFolder.boolValue
        }
        return Requirement(
            "the real Core Data material",
            missing: present
                ? nil
                : "no models/ and stores/ folders at \(folder.path); provide the shared set at ../shared/coredata "
                    + "beside the repository root, or name its folder in STRATA_COREDATA_MATERIAL")
    }()
}

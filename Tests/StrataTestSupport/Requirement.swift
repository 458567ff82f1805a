import Foundation
import Strata

/// Something tests need from the machine that the repository cannot carry (the Core Data
/// material, a PostgreSQL cluster), of one of two kinds:
///
/// - ``Kind-swift.enum/shared``: part of what every run provides (the shared Core Data set, a
///   PostgreSQL installation). Present, the tests run. Absent, under `CI=true` they still run and
///   fail at ``check()`` with what is missing and where it was looked for, so CI cannot go green
///   without them; elsewhere they are skipped, and the skip is printed with what to provide.
/// - ``Kind-swift.enum/pending``: material named for the shared set but not yet part of it. Its
///   tests are extra coverage beside tests on the project's own fixtures that always run; absent,
///   they are skipped, under `CI=true` as well (CI cannot require what its shared set does not
///   hold), with a loud banner naming what is missing and that it is pending addition. When the
///   run names the material's folder explicitly (``demanded``), a missing folder fails instead.
public struct Requirement: Sendable {
    /// Whether a missing requirement fails CI runs or is skipped in every run.
    public enum Kind: Sendable {
        /// Part of the shared set every run provides: missing under `CI=true`, the tests fail.
        case shared
        /// Named for the shared set but not yet in it: missing, the tests skip in every run.
        case pending
    }

    /// What is needed, in a few words ("Core Data material").
    public let name: String
    /// What is missing, where it was looked for and what to provide; nil when it is there.
    public let missing: String?
    /// Whether a missing requirement fails CI runs or is skipped.
    public let kind: Kind
    /// Whether the run asked for it by naming its folder: then a missing requirement fails.
    public let demanded: Bool

    /// Whether the run is a CI run (`CI=true` in the environment), where a missing shared
    /// requirement fails instead of being skipped.
    public static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// A requirement named `name`, met when `missing` is nil; `demanded` when the run named where
    /// it is (a pending requirement then fails instead of skipping).
    public init(_ name: String, missing: String?, kind: Kind = .shared, demanded: Bool = false) {
        self.name = name
        self.missing = missing
        self.kind = kind
        self.demanded = demanded
    }

    /// Whether the tests that need it run: when it is there; when it is not, a shared requirement
    /// still runs under CI and a demanded one always (both then fail at ``check()``). A skip is
    /// announced on standard error, once per requirement.
    public var runs: Bool {
        guard let missing else { return true }
        switch kind {
        case .shared:
            if Self.inCI { return true }
            announce("\(missing) (under CI=true this fails)")
        case .pending:
            if demanded { return true }
            announce(
                "\(missing). It is pending addition to the shared Core Data set, so these tests skip under CI=true "
                    + "as well; the tests on the project's own fixtures carry their coverage")
        }
        return false
    }

    private func announce(_ text: String) {
        Self.announced.withLock { names in
            guard names.insert(name).inserted else { return }
            FileHandle.standardError.write(Data("\n*** SKIPPED: the tests that need \(name): \(text) ***\n\n".utf8))
        }
    }

    /// Why the tests that need it are skipped, for the skip's comment.
    public var skipComment: String {
        "needs \(name)\(kind == .pending ? " (pending addition to the shared set)" : ""): \(missing ?? "")"
    }

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

/// Core Data material named for the shared set but not yet part of it (see
/// ``Requirement/Kind-swift.enum/pending``): tests of it skip loudly when it is absent, in CI too.
public enum PendingCoreDataMaterial {
    /// The Moody migrations of objc.io's *Core Data* book (objcio/core-data, MIT): the model bundle
    /// `Moody.xcdatamodeld`, the four `Moody N-Moody N+1.xcmappingmodel`s beside it, and
    /// `stores/Moody N.moody` that Core Data wrote with each version. Looked for in the folder
    /// `STRATA_MAPPING_MATERIAL` names, else at `mapping/objcio-core-data-moody` in the shared set.
    public static let moody: URL = {
        if let named = ProcessInfo.processInfo.environment["STRATA_MAPPING_MATERIAL"], !named.isEmpty {
            return URL(fileURLWithPath: named).standardizedFileURL
        }
        return CoreDataMaterial.mappings.appendingPathComponent("objcio-core-data-moody").standardizedFileURL
    }()

    /// The Moody material, or what is missing of it.
    public static let moodyRequirement: Requirement = {
        let named = !(ProcessInfo.processInfo.environment["STRATA_MAPPING_MATERIAL"] ?? "").isEmpty
        let needed = ["Moody.xcdatamodeld", "Moody 2-Moody 3.xcmappingmodel", "stores/Moody 2.moody"]
        let absent = needed.filter { !FileManager.default.fileExists(atPath: moody.appendingPathComponent($0).path) }
        return Requirement(
            "the objc.io Moody mapping material",
            missing: absent.isEmpty
                ? nil
                : "no \(absent.joined(separator: ", ")) in \(moody.path); it joins the shared set as "
                    + "../shared/coredata/mapping/objcio-core-data-moody (objcio/core-data, MIT), or name a copy's "
                    + "folder in STRATA_MAPPING_MATERIAL",
            kind: .pending, demanded: named)
    }()
}

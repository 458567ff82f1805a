import Foundation

/// How a split runs.
public struct SplitOptions: Sendable, Hashable {
    /// Configurations whose store is created empty instead of filled (logs and caches that are
    /// rebuilt); each still needs a target path.
    public var skip: Set<String>
    /// Rows copied per transaction; a rerun after a crash continues after the last committed chunk.
    public var chunkSize: Int
    /// The targets' SQLite `synchronous` setting while they are written.
    public var durability: StoreOptions.Durability

    /// Creates options.
    public init(skip: Set<String> = [], chunkSize: Int = 10_000, durability: StoreOptions.Durability = .full) {
        self.skip = skip
        self.chunkSize = chunkSize
        self.durability = durability
    }
}

/// Where a split is, for progress bars and logs.
public struct SplitProgress: Sendable, Hashable {
    /// What the split is doing.
    public enum Phase: String, Sendable, Hashable {
        /// Copying rows of `table` into the store of `configuration`.
        case copying
        /// Comparing row counts and checksums of `configuration`'s store with the source.
        case verifying
        /// Done.
        case finished
    }

    /// What the split is doing.
    public var phase: Phase
    /// The configuration being written.
    public var configuration: String
    /// The table being copied, if any.
    public var table: String?
    /// Rows in the targets so far (all targets).
    public var copiedRows: Int
    /// Rows the targets will hold (all targets).
    public var totalRows: Int

    /// `copiedRows / totalRows`, 1 when there is nothing to copy.
    public var fraction: Double { totalRows == 0 ? 1 : Double(copiedRows) / Double(totalRows) }
}

/// The verification of one entity (or join table) of a split: its rows in the target, and a
/// checksum of those rows in primary-key order, equal to the source's.
public struct SplitCheck: Sendable, Hashable, CustomStringConvertible {
    /// The entity, or the join table's name.
    public var name: String
    /// The rows copied.
    public var rows: Int
    /// The checksum of the rows, in lowercase hex: each row gets a 64-bit digest of every column's
    /// storage class and value; the digests are chained in key order and the chain is fed to
    /// SHA-256 every 16 rows. It changes with any value, any row added or lost, and the order.
    public var checksum: String

    /// The check as one line.
    public var description: String { "\(name): \(rows) rows, checksum \(checksum)" }
}

/// One store a split wrote.
public struct SplitTargetReport: Sendable, Hashable {
    /// The configuration it holds.
    public var configuration: String
    /// Its file.
    public var url: URL
    /// Its new UUID (primary keys are the source's).
    public var storeIdentifier: String
    /// Whether it was left empty (`skip`).
    public var skipped: Bool
    /// The verification of each entity and join table.
    public var checks: [SplitCheck]
}

/// What a split did.
public struct SplitReport: Sendable {
    /// How the split ended.
    public enum Outcome: String, Sendable, Hashable {
        /// Split from the start in this run.
        case split
        /// An interrupted split finished in this run.
        case resumed
        /// Every target was already complete; nothing was done.
        case alreadySplit
    }

    /// How the split ended.
    public var outcome: Outcome
    /// The source store's UUID.
    public var sourceIdentifier: String
    /// One report per configuration, in model order.
    public var targets: [SplitTargetReport]
    /// Rows copied in this run.
    public var rowsCopied: Int
    /// Wall-clock time of this run.
    public var seconds: Double
}

/// Moves a single-file store (every entity in one file) into one store per configuration, through
/// the kind of store the source is (see ``StoreKind/split(model:source:targets:options:progress:)``).
///
/// The source is only read, and its bytes stay as they are. Each target is created with a new UUID
/// and filled in chunked transactions that record how far they got, so a run killed at any point
/// continues where it stopped; primary keys, versions and relationships are kept; every entity's
/// row count and checksum (``SplitCheck/checksum``) are compared with the source's before a target
/// is marked complete, and an incomplete target refuses to open as a store.
public enum StoreSplitter {
    /// Splits the store at `source` into one store per configuration of `model`.
    /// - Parameters:
    ///   - model: the model the source was written with; it must declare configurations.
    ///   - source: the single-file store; it is only read.
    ///   - targets: the file of every configuration of the model.
    ///   - options: configurations to skip, chunk size, durability.
    ///   - progress: called after every chunk and phase, on the calling thread.
    /// - Throws: ``StoreError``: `.invalidRequest` for missing or unknown configurations, an entity
    ///   that would end up in several stores or in none, or a source that already holds one
    ///   configuration; `.duplicateStore` for a target that is the source or already holds another
    ///   store; `.incompatibleModel` for a source written with another model (or of no kind Strata
    ///   reads); `.io`, including a failed verification.
    public static func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions = SplitOptions(),
        progress: ((SplitProgress) -> Void)? = nil
    ) throws(StoreError) -> SplitReport {
        try sourceKind(source).split(
            model: model, source: source, targets: targets, options: options, progress: progress)
    }

    /// The kind of store `source` is.
    /// - Throws: `.io` when it does not exist, `.incompatibleModel` when no kind reads it.
    static func sourceKind(_ source: URL) throws(StoreError) -> any StoreKind {
        if let kind = StoreType.kind(recognizing: source) { return kind }
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw StoreError(.io, "no such file", storeURL: source)
        }
        throw StoreError(.incompatibleModel, "the source is not a Strata store", storeURL: source)
    }
}

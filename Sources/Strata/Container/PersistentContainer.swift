import Foundation

/// How to open one store of a container.
public struct StoreDescription: Sendable, Hashable {
    /// SQLite or in-memory.
    public var type: StoreType
    /// The configuration it holds; nil or `"Default"` for every entity.
    public var configuration: String?
    /// The file (SQLite).
    public var url: URL?
    /// Durability and read-only.
    public var options: StoreOptions

    /// Creates a description.
    public init(
        type: StoreType = .sqlite, configuration: String? = nil, url: URL? = nil, options: StoreOptions = StoreOptions()
    ) {
        self.type = type
        self.configuration = configuration
        self.url = url
        self.options = options
    }
}

/// A store of a container that could not be loaded: which one, why, and the error underneath.
public struct ContainerLoadError: Error, Sendable, CustomStringConvertible {
    /// The description that failed.
    public var store: StoreDescription
    /// What failed, in a sentence.
    public var reason: String
    /// The store error underneath.
    public var underlying: StoreError

    public var description: String {
        let location = store.url.map { $0.isFileURL ? $0.path : PGConnection.redacted($0.absoluteString) } ?? "memory"
        return
            "cannot load the \(store.configuration ?? ObjectModel.defaultConfiguration) store at \(location): \(reason)"
    }
}

/// The whole stack in one call: a model, its stores, a coordinator and a main (view) context.
///
/// It is sugar over the explicit stack: it builds the same ``StoreCoordinator`` and
/// ``ObjectContext``s an application would build by hand, and nothing else.
public final class PersistentContainer: Sendable {
    /// The model.
    public let model: ObjectModel
    /// The coordinator holding every store.
    public let coordinator: StoreCoordinator
    /// The main root context.
    public let viewContext: ObjectContext

    /// Loads every store and builds the contexts. Stores written with an older model are migrated
    /// when their options allow it, all together or not at all (``StoreCoordinator/addStores(_:)``).
    /// - Throws: ``ContainerLoadError`` for the first store that cannot be loaded; stores already
    ///   opened are closed again.
    public init(model: ObjectModel, stores: [StoreDescription], mergePolicy: MergePolicy = .error)
        throws(ContainerLoadError)
    {
        self.model = model
        coordinator = StoreCoordinator(model: model)
        do {
            // All stores together: migrations (StoreOptions.migrate) are applied to all or to none.
            try coordinator.loadStores(stores)
        } catch {
            for store in coordinator.stores { coordinator.remove(store) }
            throw ContainerLoadError(store: stores[error.index], reason: error.error.message, underlying: error.error)
        }
        viewContext = ObjectContext(coordinator: coordinator, mergePolicy: mergePolicy)
    }

    /// One SQLite store per configuration of the model (or one `Default` store when it has none),
    /// named `<configuration>.sqlite` in lowercase inside `directory`.
    public static func sqliteStores(for model: ObjectModel, in directory: URL) -> [StoreDescription] {
        if model.configurations.isEmpty {
            return [
                StoreDescription(
                    type: .sqlite, configuration: nil, url: directory.appendingPathComponent("default.sqlite"))
            ]
        }
        return model.configurations.map {
            StoreDescription(
                type: .sqlite, configuration: $0.name,
                url: directory.appendingPathComponent("\($0.name.lowercased()).sqlite"))
        }
    }

    /// A new root context on the same coordinator, for work off the main context.
    public func newBackgroundContext() -> ObjectContext {
        ObjectContext(coordinator: coordinator, mergePolicy: viewContext.mergePolicy)
    }

    /// Runs `body` on a new background context's queue.
    public func performBackgroundTask<T: Sendable>(_ body: @escaping @Sendable (ObjectContext) throws -> T) async throws
        -> T
    {
        let context = newBackgroundContext()
        return try await context.perform { try body(context) }
    }
}

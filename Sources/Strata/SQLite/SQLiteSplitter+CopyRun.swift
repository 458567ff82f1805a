import Foundation

/// The copying phase of a split.
extension SQLiteSplitter {
    /// Copies the targets' rows from the source chunk by chunk, counting them for the progress
    /// reports: `copiedRows` counts rows already in the targets as well as the ones copied.
    struct CopyRun {
        let source: SQLiteConnection
        let sourceSchema: SQLiteSchema
        let options: SplitOptions
        let progress: ((SplitProgress) -> Void)?
        /// The rows every target that is not skipped will hold.
        private(set) var total = 0
        /// The rows in the targets so far.
        private(set) var copied = 0
        /// The rows this run copied.
        private(set) var rowsCopied = 0

        init(
            source: SQLiteConnection, sourceSchema: SQLiteSchema, options: SplitOptions,
            progress: ((SplitProgress) -> Void)?
        ) {
            self.source = source
            self.sourceSchema = sourceSchema
            self.options = options
            self.progress = progress
        }

        /// Counts the rows to copy into every target that is not skipped, and those that complete
        /// targets already hold (incomplete ones are counted as `copy(into:)` opens them).
        mutating func countRows(of targets: [Target]) {
            for target in targets where !target.skipped {
                for table in target.schema.tables.values {
                    let (filter, arguments) = entityFilter(table, sourceSchema: sourceSchema)
                    total += sqliteCount(source, "SELECT count(*) FROM \(quote(table.name))\(filter)", arguments)
                }
                for join in target.schema.joinTables {
                    total += sqliteCount(source, "SELECT count(*) FROM \(quote(join.name))", [])
                }
                if target.isComplete { copied += rowsHeld(by: target) }
            }
        }

        /// Fills an incomplete target from where its recorded progress stopped, table by table
        /// then join table by join table, then verifies it and marks it complete.
        mutating func copy(into target: Target) throws(StoreError) {
            try open(target, options: options)
            var last = progressRecord(target)
            copied += rowsHeld(by: target)
            report(.copying, target)
            // Taken out of `self`, which `copyInChunks` changes while the chunks are copied.
            let (source, sourceSchema, chunkSize) = (self.source, self.sourceSchema, options.chunkSize)
            for table in target.schema.tables.values.sorted(by: { $0.name < $1.name }) {
                try copyInChunks(into: target, table: table.name) { () throws(StoreError) in
                    try copyChunk(
                        table, target: target, source: source, sourceSchema: sourceSchema, last: &last,
                        chunkSize: chunkSize)
                }
            }
            for join in target.schema.joinTables {
                try copyInChunks(into: target, table: join.name) { () throws(StoreError) in
                    try copyJoinChunk(join, target: target, source: source, last: &last, chunkSize: chunkSize)
                }
            }
            report(.verifying, target)
            try finish(target, source: source, sourceSchema: sourceSchema)
        }

        /// Runs `copyChunk` until a chunk comes back short of the chunk size, reporting each one
        /// that copied rows.
        private mutating func copyInChunks(
            into target: Target, table: String, _ copyChunk: () throws(StoreError) -> Int
        ) throws(StoreError) {
            while true {
                let count = try copyChunk()
                copied += count
                rowsCopied += count
                if count > 0 { report(.copying, target, table: table) }
                if count < options.chunkSize { break }
            }
        }

        /// The rows a target holds in its tables and join tables.
        private func rowsHeld(by target: Target) -> Int {
            target.schema.tables.keys.reduce(0) { $0 + targetCount(target, $1) }
                + target.schema.joinTables.reduce(0) { $0 + targetCount(target, $1.name) }
        }

        /// Tells `progress` where the run is.
        func report(_ phase: SplitProgress.Phase, _ target: Target, table: String? = nil) {
            progress?(
                SplitProgress(
                    phase: phase, configuration: target.configuration, table: table, copiedRows: copied,
                    totalRows: total))
        }
    }
}

import Foundation
import Strata

/// Request counters, a latency histogram and save counters, rendered as Prometheus text.
public final class Metrics: Sendable {
    struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    struct State {
        var requests: [Key: Int] = [:]
        var buckets = [Int](repeating: 0, count: Metrics.bounds.count)
        var count = 0
        var sum = 0.0
        var saves: [String: Int] = [:]
        var prunedHistory: [String: Int] = [:]
    }

    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    private let state = Locked(State())

    /// Creates empty metrics.
    public init() {}

    /// Counts one request.
    public func record(route: String, method: String, status: Int, seconds: Double) {
        state.withLock { s in
            s.requests[Key(route: route, method: method, status: status), default: 0] += 1
            for (index, bound) in Self.bounds.enumerated() where seconds <= bound { s.buckets[index] += 1 }
            s.count += 1
            s.sum += seconds
        }
    }

    /// Counts a root save that wrote to `stores` (store UUIDs).
    public func recordSave(stores: [String]) {
        state.withLock { s in for store in stores { s.saves[store, default: 0] += 1 } }
    }

    /// Counts history transactions the background pruner forgot in store `store` (its UUID); a
    /// count of 0 makes the store's counter appear.
    public func recordPrunedHistory(_ count: Int, store: String) {
        state.withLock { s in s.prunedHistory[store, default: 0] += count }
    }

    /// How many history transactions the pruner forgot in store `store` so far.
    public func prunedHistory(store: String) -> Int { state.withLock { $0.prunedHistory[store] ?? 0 } }

    /// How many requests were answered with `status` on `route` (for tests and the benchmark).
    public func requests(route: String, status: Int) -> Int {
        state.withLock { s in s.requests.filter { $0.key.route == route && $0.key.status == status }.values.reduce(0, +)
        }
    }

    /// The Prometheus text exposition.
    public func render(stores: [StoreSummary]) -> String {
        let s = state.withLock { $0 }
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        }
        var lines = [
            "# HELP strata_requests_total Requests answered, by route, method and status.",
            "# TYPE strata_requests_total counter",
        ]
        for (key, value) in s.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            lines.append(
                "strata_requests_total{route=\"\(escape(key.route))\",method=\"\(escape(key.method))\",status=\"\(key.status)\"} \(value)"
            )
        }
        lines += [
            "# HELP strata_request_duration_seconds Time to answer a request.",
            "# TYPE strata_request_duration_seconds histogram",
        ]
        for (index, bound) in Self.bounds.enumerated() {
            lines.append("strata_request_duration_seconds_bucket{le=\"\(bound)\"} \(s.buckets[index])")
        }
        lines.append("strata_request_duration_seconds_bucket{le=\"+Inf\"} \(s.count)")
        lines.append("strata_request_duration_seconds_sum \(s.sum)")
        lines.append("strata_request_duration_seconds_count \(s.count)")
        lines += [
            "# HELP strata_store_saves_total Root saves that wrote to a store.",
            "# TYPE strata_store_saves_total counter",
        ]
        lines += [
            "# HELP strata_store_file_bytes Bytes a store takes where it lives (an SQLite store: database and WAL).",
            "# TYPE strata_store_file_bytes gauge",
        ]
        func label(_ store: StoreSummary) -> String {
            "store=\"\(store.identifier)\",configuration=\"\(escape(store.configuration ?? ObjectModel.defaultConfiguration))\""
        }
        for store in stores {
            let label = label(store)
            lines.append("strata_store_saves_total{\(label)} \(s.saves[store.identifier] ?? 0)")
            if let bytes = store.storageBytes { lines.append("strata_store_file_bytes{\(label)} \(bytes)") }
        }
        if !s.prunedHistory.isEmpty {
            lines += [
                "# HELP strata_history_pruned_transactions_total History transactions this server's pruner forgot.",
                "# TYPE strata_history_pruned_transactions_total counter",
            ]
            for store in stores where s.prunedHistory[store.identifier] != nil {
                lines.append(
                    "strata_history_pruned_transactions_total{\(label(store))} \(s.prunedHistory[store.identifier] ?? 0)"
                )
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

import Foundation

/// Calls `condition` until it holds or `seconds` have passed on a monotonic clock, `interval`
/// seconds apart; returns whether it held. Tests wait for what they expect this way, never for
/// a fixed time.
@discardableResult
public func eventually(within seconds: Double = 60, interval: Double = 0.01, _ condition: () throws -> Bool) rethrows
    -> Bool
{
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
    while true {
        if try condition() { return true }
        if clock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: interval)
    }
}

/// Waits until `condition` holds, throwing when `seconds` pass first (see
/// ``eventually(within:interval:_:)``).
public func waitUntil(seconds: Double = 60, _ condition: () throws -> Bool) throws {
    guard try eventually(within: seconds, condition) else {
        throw TestClientError("a condition did not hold within \(seconds) s")
    }
}

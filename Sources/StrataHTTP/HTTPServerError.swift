/// Why an ``HTTPServer`` could not start: a busy port, an address that is not an IP address, ….
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// A sentence explaining the problem, naming the host and port concerned.
    public var message: String

    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

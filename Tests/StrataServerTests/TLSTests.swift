import Foundation
import Strata
import StrataTestSupport
import Testing

/// HTTPS straight from libmicrohttpd (GnuTLS), with certificates the test makes with openssl.
@Suite(.serialized) struct TLSTests {
    /// Runs a tool and returns its exit status and output.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// A self-signed certificate for 127.0.0.1 named `name`: (certificate, key) paths.
    static func certificate(_ name: String, in folder: TemporaryDirectory, curve: Bool = false) throws -> (
        String, String
    ) {
        let certificate = folder.file("\(name).crt").path
        let key = folder.file("\(name).key").path
        let kind = curve ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] : ["-newkey", "rsa:2048"]
        let (status, output) = try run(
            "openssl",
            ["req", "-x509"] + kind + [
                "-nodes", "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=\(name)", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
        #expect(status == 0, "\(output)")
        return (certificate, key)
    }

    /// GET `path` over HTTPS trusting only `authority`; the status, or 0 when TLS failed.
    static func get(_ port: UInt16, _ path: String, trusting authority: String) throws -> Int {
        let (_, output) = try run(
            "curl",
            ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", authority, "https://127.0.0.1:\(port)\(path)"])
        return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    @Test func itServesHTTPSAndTakesANewCertificateOnSIGHUP() throws {
        let folder = TemporaryDirectory()
        let (first, firstKey) = try Self.certificate("first", in: folder)
        let (second, secondKey) = try Self.certificate("second", in: folder, curve: true)
        let served = folder.file("served.crt").path
        let servedKey = folder.file("served.key").path
        try FileManager.default.copyItem(atPath: first, toPath: served)
        try FileManager.default.copyItem(atPath: firstKey, toPath: servedKey)
        let server = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.file("data").path, "--tls-cert", served, "--tls-key",
            servedKey,
            "--token", "app:read:a-token-for-the-tls-test",
        ])
        let port = try #require(server.port(), "\(server.stderr.current)")
        #expect(server.stderr.current.contains("on https://"))
        #expect(try Self.get(port, "/live", trusting: first) == 200)
        #expect(try Self.get(port, "/books", trusting: first) == 401)
        // Plain HTTP on the TLS port gets no answer; the health probe speaks TLS when told.
        #expect((try? TestClient(port: port).send("GET", "/live"))?.status != 200)
        let (health, healthOutput) = try Self.run(
            "env", ["STRATA_PORT=\(port)", "STRATA_TLS_CERT=\(served)", try strataBinary().path, "health"])
        #expect(health == 0, "\(healthOutput)")
        // SIGHUP: new connections get the new certificate; no restart.
        try FileManager.default.removeItem(atPath: served)
        try FileManager.default.removeItem(atPath: servedKey)
        try FileManager.default.copyItem(atPath: second, toPath: served)
        try FileManager.default.copyItem(atPath: secondKey, toPath: servedKey)
        kill(server.process.processIdentifier, SIGHUP)
        #expect(server.waitFor("TLS certificate and key read again"), "\(server.stderr.current)")
        #expect(try Self.get(port, "/live", trusting: second) == 200)
        #expect(try Self.get(port, "/live", trusting: first) == 0)
        // A broken file at the next SIGHUP leaves the certificate in force.
        try "not a certificate".write(toFile: served, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        #expect(server.waitFor("the certificate in force stays"), "\(server.stderr.current)")
        #expect(try Self.get(port, "/live", trusting: second) == 200)
        #expect(!server.stderr.current.contains("a-token-for-the-tls-test"))
    }

    @Test func aCertificateThatCannotBeReadStopsTheStartWithOneMessage() throws {
        let folder = TemporaryDirectory()
        let broken = folder.file("broken.crt").path
        try "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n".write(
            toFile: broken, atomically: true, encoding: .utf8)
        let (_, key) = try Self.certificate("key-only", in: folder)
        for arguments in [["--tls-cert", broken, "--tls-key", key], ["--tls-cert", broken]] {
            let server = try StrataProcess(["serve", "--port", "0", "--data-dir", folder.file("d").path] + arguments)
            let status = server.waitForExit()
            #expect(status != nil && status != 0)
            #expect(server.stderr.current.contains("certificate") || server.stderr.current.contains("--tls-key"))
            #expect(!server.stderr.current.contains("Fatal error"), "\(server.stderr.current)")
        }
    }
}

import StrataHTTP

/// The version of libmicrohttpd the server is linked against.
public var microHTTPDVersion: String { HTTPServer.libraryVersion }

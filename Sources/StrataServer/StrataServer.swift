import CMicroHTTPD
import Strata

/// The version of libmicrohttpd the server is linked against.
public var microHTTPDVersion: String { String(cString: MHD_get_version()) }

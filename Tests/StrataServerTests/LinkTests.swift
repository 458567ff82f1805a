import StrataServer
import StrataTestSupport
import Testing

@Test func linksLibmicrohttpd() {
    #expect(microHTTPDVersion.hasPrefix("0.9") || microHTTPDVersion.hasPrefix("1."))
}

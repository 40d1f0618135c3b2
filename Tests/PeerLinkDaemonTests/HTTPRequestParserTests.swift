import XCTest
@testable import PeerLinkDaemon

/// The API's HTTP/1.1 request reader: what it takes, every limit, and the ambiguous inputs
/// (request smuggling's raw material) it refuses.
final class HTTPRequestParserTests: XCTestCase {
    func parse(_ text: String, limits: HTTPRequestParser.Limits = .init(), chunk: Int = .max) throws(HTTPParseError) -> HTTPRequest? {
        var p = HTTPRequestParser(limits: limits)
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let end = min(bytes.count, i + max(1, min(chunk, bytes.count)))
            if let r = try p.push(bytes[i..<end]) { return r }
            i = end
        }
        return nil
    }

    func refused(_ text: String, _ status: Int, _ words: String, limits: HTTPRequestParser.Limits = .init(),
                 file: StaticString = #filePath, line: UInt = #line) {
        do {
            let r = try parse(text, limits: limits)
            XCTFail("accepted: \(String(describing: r))", file: file, line: line)
        } catch {
            XCTAssertEqual(error.status, status, "\(error)", file: file, line: line)
            XCTAssertTrue(error.message.contains(words), "'\(words)' not in '\(error.message)'", file: file, line: line)
        }
    }

    func testAGetWithAQuery() throws {
        let r = try XCTUnwrap(parse("GET /v1/items?state=queued,sending&x=a%20b+c HTTP/1.1\r\nHost: localhost\r\nUser-Agent:  t \r\n\r\n"))
        XCTAssertEqual(r.method, "GET")
        XCTAssertEqual(r.path, "/v1/items")
        XCTAssertEqual(r.query, ["state": "queued,sending", "x": "a b c"])
        XCTAssertEqual(r.header("user-agent"), "t", "names lowercased, values trimmed")
        XCTAssertEqual(r.body, [])
    }

    func testAPostBodyArrivingByteByByte() throws {
        let body = #"{"peer":"x","path":"/a"}"#
        let text = "POST /v1/items HTTP/1.1\r\nHost: h\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        for chunk in [1, 2, 7, 1000] {
            let r = try XCTUnwrap(parse(text, chunk: chunk), "chunk \(chunk)")
            XCTAssertEqual(r.body, Array(body.utf8))
        }
        XCTAssertNil(try parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabc"), "waits for the rest of the body")
        XCTAssertNil(try parse("GET / HTTP/1.1\r\nHost: h\r\n"), "waits for the end of the headers")
    }

    func testHTTP10NeedsNoHost() throws {
        XCTAssertNotNil(try parse("GET /v1/status HTTP/1.0\r\n\r\n"))
    }

    func testLimits() {
        var small = HTTPRequestParser.Limits()
        small.headerBytes = 100; small.headerCount = 3; small.bodyBytes = 10
        refused("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n", 431, "over 100 bytes", limits: small)
        refused("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 100))", 431, "over 100 bytes", limits: small)
        refused("GET / HTTP/1.1\r\nHost: h\r\na: 1\r\nb: 2\r\nc: 3\r\n\r\n", 431, "more than 3 header fields", limits: small)
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", 413, "over 10 bytes", limits: small)
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", 413, "over 1048576 bytes")
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400, "not a number")
        refused("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 17000))\r\n\r\n", 431, "over 16384")
    }

    func testMalformedRequestLines() {
        refused("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "METHOD SP TARGET")
        refused("GET / HTTP/1.1 x\r\nHost: h\r\n\r\n", 400, "METHOD SP TARGET")
        refused("get / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "upper-case token")
        refused("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "absolute path")
        refused("GET /a\u{7f} HTTP/1.1\r\nHost: h\r\n\r\n", 400, "visible ASCII")
        refused("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "only HTTP/1.1")
        refused("GET / FTP/1.1\r\nHost: h\r\n\r\n", 400, "version")
        refused("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "no request line")
        refused("GET /?a=%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent-encoding")
    }

    func testLineEndsMustBeCRLF() {
        refused("GET / HTTP/1.1\nHost: h\r\n\r\n", 400, "bare LF")
        refused("GET / HTTP/1.1\r\nHost: h\n\n", 400, "bare LF")
        refused("GET / HTTP/1.1\rHost: h\r\n\r\n", 400, "bare CR")
        refused("GET / HTTP/1.1\r\nHost: h\r\r\n\r\n", 400, "bare CR")
    }

    func testSmugglingMaterialIsRefused() {
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400, "more than one Content-Length")
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", 400, "not a number")
        refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc", 400, "not a number")
        refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", 400, "both")
        refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, "Transfer-Encoding")
        refused("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400, "folded")
        refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 3\r\n\r\nabc", 400, "not a token")
        refused("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{1}b\r\n\r\n", 400, "control character")
        refused("GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n", 400, "without a colon")
        refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "exactly one Host")
        refused("GET / HTTP/1.1\r\n\r\n", 400, "exactly one Host")
    }
}

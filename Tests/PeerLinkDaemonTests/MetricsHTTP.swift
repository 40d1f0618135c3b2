import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A scrape as Prometheus makes one: a TCP connection to 127.0.0.1:`port`, the raw request
/// sent, everything read until the server closes.
struct ScrapeAnswer {
    var status: Int
    var head: String
    var body: String

    init?(_ raw: [UInt8]) {
        let text = String(decoding: raw, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        head = String(text[..<split.lowerBound])
        body = String(text[split.upperBound...])
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let s = Int(parts[1]) else { return nil }
        status = s
    }

    /// The value of the sample line `series` (name and labels exactly as written), if present.
    func value(_ series: String) -> Double? {
        for line in body.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}

/// Sends `request` to 127.0.0.1:`port` and returns the answer (nil: no connection or no HTTP).
func scrape(port: UInt16, _ request: String = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n") -> ScrapeAnswer? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard rc == 0 else { return nil }
    var tv = timeval(tv_sec: 10, tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    let bytes = Array(request.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return nil }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { break }
        out += buffer[..<n]
    }
    return ScrapeAnswer(out)
}

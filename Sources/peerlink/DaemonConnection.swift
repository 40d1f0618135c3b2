import Foundation
import PeerLinkDaemon

/// The CLI's way to a running daemon's API (docs/API.md): the socket by the rule of
/// `DaemonPaths` (or `--socket`), JSON requests, and the daemon's errors as sentences.
struct DaemonConnection {
    let client: DaemonClient

    var socketPath: String { client.socketPath }

    init(socket: String?) {
        client = DaemonClient(socketPath: socket ?? DaemonPaths.socket(in: DaemonPaths.runtimeDirectory()))
    }

    /// Whether a daemon answers on the socket now (what `peerlink send` checks before using it).
    enum Probe: Equatable {
        case running
        /// No socket, or nobody accepting on it.
        case absent
        /// A daemon is there but answered with an error (e.g. 403: this user may not use it).
        case refused(String)
    }

    func probe() -> Probe {
        guard FileManager.default.fileExists(atPath: socketPath) else { return .absent }
        var quick = client
        quick.timeout = .seconds(2)
        do {
            let answer = try quick.request("GET", "/v1/status")
            if answer.status == 200 { return .running }
            let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
            let message = ((object?["error"] as? [String: Any])?["message"] as? String) ?? "status \(answer.status)"
            return .refused("the daemon at \(socketPath) answered \(answer.status): \(message)")
        } catch is DaemonClient.NotRunning {
            return .absent
        } catch {
            return .refused("the daemon at \(socketPath) did not answer: \(error)")
        }
    }

    /// Sends a request and returns the answer's JSON object; an error status or an unreadable
    /// answer throws a `RuntimeFailure` with the daemon's message.
    func json(_ method: String, _ path: String, body: [String: Any]? = nil) throws -> [String: Any] {
        let data = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        let answer: (status: Int, body: [UInt8])
        do {
            answer = try client.request(method, path, json: data)
        } catch {
            throw RuntimeFailure("\(error)")
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        guard (200..<300).contains(answer.status), let object else {
            let message = ((object?["error"] as? [String: Any])?["message"] as? String) ?? String(decoding: answer.body, as: UTF8.self)
            throw RuntimeFailure("the daemon answered \(answer.status): \(message)")
        }
        return object
    }
}

/// One step of negotiating a new link inside a session (LINK_SETUP, docs/PROTOCOL.md §9.10):
/// how two peers on a Bluetooth session agree to form a Wi-Fi Direct group, hand over what
/// the joiner needs to reach the host, and later take it down. The session carries it, so
/// credentials only ever travel inside the Noise-secured channel.
///
/// The medium's own fields travel as named parameters that only that medium's plug-in reads;
/// this codec checks their bounds, not their meaning.
package struct LinkSetup: Equatable, Sendable {
    /// The steps of a negotiation, in the order they usually come.
    package enum Step: UInt8, Sendable, CaseIterable {
        /// "Shall we add a link of `medium`?" Parameters: `roles` (one byte, `Roles`).
        case propose = 1
        /// The proposal is accepted; parameter `role`: the proposer's role (1 host, 2 join).
        case accept = 2
        /// The proposal is refused; `text` says why. Nothing changes.
        case reject = 3
        /// The host's set-up is ready; the parameters say how to join and reach it.
        case ready = 4
        /// A step failed on the sender's side; `text` says which and why. Both sides stop.
        case failed = 5
        /// The link's set-up is being taken down (idle, user request); `text` says why.
        case teardown = 6
    }

    /// Which ends of a set-up a peer can take.
    package struct Roles: OptionSet, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Can create the group (Wi-Fi Direct group owner, soft-AP) and listen on it.
        package static let host = Roles(rawValue: 1)
        /// Can join a group the peer created and dial it.
        package static let join = Roles(rawValue: 2)
    }

    /// Chosen by the proposer, unique among its negotiations with this peer.
    package var id: UInt32
    package var step: Step
    /// The medium's registered name, e.g. "wifi-direct".
    package var medium: String
    /// Named parameters, in order; names are unique.
    package var parameters: [Parameter]
    /// A reason for people (reject, failed, teardown; the proposer's motive for propose).
    package var text: String

    package struct Parameter: Equatable, Sendable {
        package var name: String
        package var value: [UInt8]
        package init(_ name: String, _ value: [UInt8]) { self.name = name; self.value = value }
        package init(_ name: String, string: String) { self.init(name, Array(string.utf8)) }
    }

    package init(id: UInt32, step: Step, medium: String, parameters: [Parameter] = [], text: String = "") {
        self.id = id; self.step = step; self.medium = medium; self.parameters = parameters; self.text = text
    }

    /// Bounds: a hostile peer cannot make a node hold more than a few KiB per message.
    package enum Limits {
        package static let medium = 32
        package static let parameters = 16
        package static let parameterName = 32
        package static let parameterValue = 512
    }

    /// The value of parameter `name`, if present.
    package func value(_ name: String) -> [UInt8]? { parameters.first { $0.name == name }?.value }
    /// Parameter `name` as UTF-8 text, if present and valid.
    package func string(_ name: String) -> String? { value(name).flatMap { String(validating: $0, as: UTF8.self) } }

    func encode(into w: inout WireWriter) {
        w.u32(id)
        w.u8(step.rawValue)
        let m = Array(medium.utf8Prefix(Limits.medium).utf8)
        w.u8(UInt8(m.count)); w.append(m)
        let ps = parameters.prefix(Limits.parameters)
        w.u8(UInt8(ps.count))
        for p in ps {
            let n = Array(p.name.utf8Prefix(Limits.parameterName).utf8)
            w.u8(UInt8(n.count)); w.append(n)
            let v = p.value.prefix(Limits.parameterValue)
            w.u16(UInt16(v.count)); w.append(v)
        }
        w.string16(text.utf8Prefix(WireLimits.reasonText))
    }

    static func decode(_ r: inout WireReader) throws -> LinkSetup {
        let id = try r.u32("link set-up id")
        let rawStep = try r.u8("link set-up step")
        guard let step = Step(rawValue: rawStep) else { throw WireError.unknownType(context: "link set-up step", value: rawStep) }
        let medium = try short(&r, "link set-up medium", limit: Limits.medium)
        guard !medium.isEmpty else { throw WireError.invalid(field: "link set-up medium", reason: "empty") }
        let count = Int(try r.u8("link set-up parameter count"))
        guard count <= Limits.parameters else {
            throw WireError.limitExceeded(field: "link set-up parameter count", value: count, limit: Limits.parameters)
        }
        var parameters: [Parameter] = []
        for _ in 0..<count {
            let name = try short(&r, "link set-up parameter name", limit: Limits.parameterName)
            guard !name.isEmpty else { throw WireError.invalid(field: "link set-up parameter name", reason: "empty") }
            guard !parameters.contains(where: { $0.name == name }) else {
                throw WireError.invalid(field: "link set-up parameter '\(name)'", reason: "given twice")
            }
            let n = Int(try r.u16("link set-up parameter length"))
            guard n <= Limits.parameterValue else {
                throw WireError.limitExceeded(field: "link set-up parameter '\(name)'", value: n, limit: Limits.parameterValue)
            }
            parameters.append(Parameter(name, try r.take(n, "link set-up parameter '\(name)'")))
        }
        let text = try r.string16("link set-up text", limit: WireLimits.reasonText)
        return LinkSetup(id: id, step: step, medium: medium, parameters: parameters, text: text)
    }

    /// A UTF-8 string with a one-byte length.
    private static func short(_ r: inout WireReader, _ field: String, limit: Int) throws -> String {
        let n = Int(try r.u8("\(field) length"))
        guard n <= limit else { throw WireError.limitExceeded(field: field, value: n, limit: limit) }
        guard let s = String(validating: try r.take(n, field), as: UTF8.self) else {
            throw WireError.invalid(field: field, reason: "not valid UTF-8")
        }
        return s
    }
}

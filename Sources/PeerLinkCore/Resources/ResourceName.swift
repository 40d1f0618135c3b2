/// The file name a receiver uses for a resource, from the name its sender gave: the last path
/// component, without control characters or NUL, never empty, `.`, `..` or hidden (PROTOCOL §9.6
/// leaves names to the receiver). A sender's name is never trusted as a path.
package enum ResourceName {
    package static func safe(_ raw: String) -> String {
        let last = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let cleaned = String(String.UnicodeScalarView(last.unicodeScalars.filter {
            $0.properties.generalCategory != .control && $0 != "\0"
        }))
        guard cleaned.isEmpty || cleaned == "." || cleaned == ".." || cleaned.hasPrefix(".") else { return cleaned }
        let rest = cleaned.drop(while: { $0 == "." })
        return rest.isEmpty ? "received" : "received-" + rest
    }
}

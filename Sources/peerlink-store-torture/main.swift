import Foundation
import PeerLinkStore

/// peerlink-store-torture DIR RUN [--items N] [--seed S] [--max-size BYTES] [--chunk BYTES]
///
/// One run of the crash-test workload in DIR (docs/STORE.md): the first run writes DIR's
/// manifest from the seed; every run resumes from the ledgers under DIR. Exit 0 and "done"
/// when every item is delivered or expired. Set PEERLINK_CRASH_AT to die at a crash point.
let usage = "usage: peerlink-store-torture DIR RUN [--items N] [--seed S] [--max-size BYTES] [--chunk BYTES]"
var args = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, _ fallback: UInt64, in args: inout [String]) -> UInt64 {
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = UInt64(args[i + 1]) else { return fallback }
    args.removeSubrange(i...(i + 1))
    return v
}
let items = Int(option("--items", 24, in: &args))
let seed = option("--seed", 1, in: &args)
let maxSize = Int(max(option("--max-size", 160 * 1024, in: &args), 1))
let chunk = Int(max(option("--chunk", 32 * 1024, in: &args), 1))
guard args.count == 2, let run = Int(args[1]) else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
let dir = args[0]
do {
    try DurableFile.makeDirectory(dir)
    let manifestPath = dir + "/manifest.json"
    let manifest: Manifest
    if let data = FileManager.default.contents(atPath: manifestPath) {
        manifest = try JSONDecoder().decode(Manifest.self, from: data)
    } else {
        manifest = Manifest.make(seed: seed, count: items, maxSize: maxSize, chunk: chunk)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try DurableFile.replace(manifestPath, with: Array(try encoder.encode(manifest)))
    }
    var workload = Workload(dir: dir, run: run, manifest: manifest)
    try workload.perform()
    print("done")
} catch {
    FileHandle.standardError.write(Data("peerlink-store-torture: \(error)\n".utf8))
    exit(1)
}

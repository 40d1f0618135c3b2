extension Duration {
    /// Whole milliseconds (rounded down), as the CLI prints times and its JSON carries them.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

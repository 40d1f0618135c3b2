import Foundation

// Structured lifetimes: each `run` starts the thing, hands it to `body`, and stops it when
// `body` returns, throws or is cancelled — nothing of it outlives the scope.

/// Runs `body` after `start`, then `stop` however `body` ends (its result or error passed on).
private func scoped<R>(isolation: isolated (any Actor)? = #isolation, start: () async throws -> Void,
                       stop: () async -> Void, _ body: () async throws -> R) async throws -> R {
    try await start()
    do {
        let result = try await body()
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}

extension Node {
    /// Listens on every transport while `body` runs, and stops listening when it ends (returns,
    /// throws or is cancelled). Sessions made in the scope should end in it too
    /// (``Session/run(isolation:_:)``).
    public func run<R>(port: UInt16 = 0, isolation: isolated (any Actor)? = #isolation,
                       _ body: (Node) async throws -> R) async throws -> R {
        try await scoped(start: { try await start(port: port) }, stop: { await stop() }) { try await body(self) }
    }
}

extension Session {
    /// Runs `body` with this session, then leaves it (``disconnect()``: peers are told, links
    /// close, negotiated groups are taken down) however `body` ends.
    public func run<R>(isolation: isolated (any Actor)? = #isolation, _ body: (Session) async throws -> R) async throws -> R {
        try await scoped(start: {}, stop: { await disconnect() }) { try await body(self) }
    }
}

extension Advertiser {
    /// Publishes the node while `body` runs (see ``start()``), then withdraws it, declines
    /// further invitations and ends ``invitations``, however `body` ends.
    public func run<R>(isolation: isolated (any Actor)? = #isolation, _ body: (Advertiser) async throws -> R) async throws -> R {
        try await scoped(start: { try await start() }, stop: { await stop() }) { try await body(self) }
    }
}

extension Browser {
    /// Browses while `body` runs (see ``start()``), then stops, waiting for the backends'
    /// teardown, however `body` ends.
    public func run<R>(isolation: isolated (any Actor)? = #isolation, _ body: (Browser) async throws -> R) async throws -> R {
        try await scoped(start: { try await start() }, stop: { await stopAndWait() }) { try await body(self) }
    }
}

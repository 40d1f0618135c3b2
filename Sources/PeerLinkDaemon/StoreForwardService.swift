import PeerLink
import PeerLinkCore

/// The store-and-forward service's place in the node (docs/PROTOCOL.md §16): peers' streams
/// named `peerlink/sf/…` reach the daemon through `incoming`, never the application's events.
final class StoreForwardService: NodeService {
    static let streamName = "peerlink/sf/1"
    let name = "store-and-forward"
    let streamPrefix: String? = "peerlink/sf/"
    /// Streams peers opened to this node's service, in the order they were opened.
    let incoming: AsyncStream<IncomingStream>
    private let sink: AsyncStream<IncomingStream>.Continuation

    init() { (incoming, sink) = AsyncStream.makeStream(bufferingPolicy: .unbounded) }

    func makeHandler(peer: PeerID, session: Session) -> any PeerProtocolHandler { Handler(sink: sink) }

    func finish() { sink.finish() }

    /// One peer channel's side: hands the peer's service streams over; takes no other event.
    final class Handler: PeerProtocolHandler {
        private let sink: AsyncStream<IncomingStream>.Continuation
        init(sink: AsyncStream<IncomingStream>.Continuation) { self.sink = sink }
        func handle(_ event: SessionEvent, in channel: isolated PeerChannel) -> Bool { false }
        func streamOpened(_ stream: IncomingStream, in channel: isolated PeerChannel) { sink.yield(stream) }
    }
}

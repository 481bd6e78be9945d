/// One of libmicrohttpd's own log messages, sorted by whose doing it is.
///
/// Most of what libmicrohttpd reports is a client going away: a closed tab drops its event
/// stream ("Failed to send the chunked response body … forcibly closed by remote peer"), a
/// phone loses its signal mid-request. That is the web working normally; logged as errors it
/// once made 110,000 lines in 20 s of stream churn (issue 25). Only the rest is a server
/// problem (a port in use, a failed accept, out of memory).
public struct LibraryMessage: Sendable, CustomStringConvertible {
    public let text: String
    /// True when the message only says that a client hung up, reset or timed out.
    public let isClientGone: Bool

    public init(_ text: String) {
        self.text = text
        isClientGone = Self.clientGoneMarks.contains { text.contains($0) }
    }

    public var description: String { text }

    /// The same message without what varies from one occurrence to the next (the request
    /// target, an error's words): what a log groups repeats by.
    public var template: String {
        String(text.prefix { $0 != "`" && $0 != ":" && $0 != "'" })
    }

    /// Words of libmicrohttpd 0.9.75's messages (and of its socket error texts) that mean the
    /// peer went away: reading a request from a closed or reset socket, sending to one.
    private static let clientGoneMarks = [
        "closed by remote peer",                     // ECONNRESET while sending
        "no longer available for sending",           // EPIPE, ENOTCONN
        "disconnected when reading request",         // read returned 0 mid-request
        "closed when reading request",               // a read error (reset) mid-request
        "closed by remote side with incomplete request",
        "Failed to send data in request",            // the 100-continue to a gone client
    ]
}

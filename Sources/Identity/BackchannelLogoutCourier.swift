import Foundation
import OutsideHTTP
import SignupDomain

/// Tells an application that a session it holds has ended (OpenID Connect Back-Channel
/// Logout 1.0): `logout_token=<JWT>` posted to its `backchannel_logout_uri`, the token made
/// and signed at each attempt. A 2xx is delivered; a 4xx is the application refusing the
/// token (sending it again cannot help: parked); anything else is tried again.
package struct BackchannelLogoutCourier: OutboxCourier {
    private let server: AuthorizationServer
    private let fetcher: BoundedHTTPFetcher

    /// Tried for an hour: after that the application's own session would have to be
    /// distrusted anyway, and the operator sees the parked events.
    package static let schedule = DeliverySchedule(retryWindow: 3600, firstRetryDelay: 5, attemptTimeout: 10)

    package init(server: AuthorizationServer) {
        self.server = server
        fetcher = BoundedHTTPFetcher(
            limits: .init(maxBytes: 16 * 1024, deadline: Self.schedule.attemptTimeout, maxConcurrent: 1,
                          failuresBeforePause: .max, pause: 0),
            headers: ["Content-Type": "application/x-www-form-urlencoded", "User-Agent": "LiveSignup"], now: server.now)
    }

    package func deliver(_ event: OutboxEvent) -> CourierResult {
        guard let logout = try? JSONDecoder().decode(AuthorizationServer.BackchannelLogout.self, from: Data(event.body.utf8)),
              let url = URL(string: logout.uri) else { return .refused("an unreadable back-channel logout event") }
        let token: String
        do {
            token = try server.logoutToken(logout)
        } catch {
            return .retry("the logout token could not be signed: \(error)")
        }
        do {
            _ = try fetcher.post(url, body: Array("logout_token=\(AuthorizationRequest.encode(token))".utf8), headers: [])
            return .delivered
        } catch {
            let failure = "\(url.host ?? "the application") \(error)"
            if case .status(let code) = error, (400...499).contains(code), code != 408, code != 429 { return .refused(failure) }
            return .retry(failure)
        }
    }
}

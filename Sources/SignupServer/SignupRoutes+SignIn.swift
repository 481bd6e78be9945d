import Foundation
import MicroHTTPD
import SignupDomain

/// `GET/POST /signin`: a small sign-in form that proves an account is real.
extension SignupRoutes {
    static let signInFailedMessage = "The username or password is incorrect"

    func signInPage(username: String, error: String?, status: HTTPStatus) -> HTTPResponse {
        html(renderer.renderSignIn(username: username, errorMessage: error, assets: assets), status: status)
    }

    func signIn(_ request: HTTPRequest) -> HTTPResponse {
        let form: URLEncodedForm
        switch decodeForm(request) {
        case .success(let decoded): form = decoded
        case .failure(let error): return error.response
        }
        let username = form["username"] ?? ""
        let password = (form["password"] ?? "").precomposedStringWithCanonicalMapping
        guard !username.isEmpty, !password.isEmpty else {
            return signInPage(username: username, error: "Enter your username and password", status: .unprocessableContent)
        }
        let account: Account?
        do {
            account = try store.account(named: username)
        } catch {
            logger.error("Account store unavailable during sign-in", metadata: ["error": "\(error)"])
            return signInPage(username: username, error: "Signing in is not possible right now. Try again shortly.",
                              status: .serviceUnavailable)
        }
        // Unknown names are verified against a fixed hash too, so the answer takes as long
        // whether or not the account exists.
        let hash = account?.passwordHash ?? placeholderHash
        return .later { [self] respond in
            hashing.verify(password, against: hash) { matches in
                guard matches, let account else {
                    respond(signInPage(username: username, error: Self.signInFailedMessage, status: .unauthorized))
                    return
                }
                respond(redirect(to: "/welcome", cookie: signedIn.signIn(username: account.username)))
            }
        }
    }
}

import Foundation
import MicroHTTPD
import ReactiveValidation
import SignupDomain

/// `POST /signup`: the plain form post that creates an account, with or without JavaScript.
extension SignupRoutes {
    func submit(_ request: HTTPRequest) -> HTTPResponse {
        let form: URLEncodedForm
        switch decodeForm(request) {
        case .success(let decoded): form = decoded
        case .failure(let error): return error.response
        }
        let username = form["username"] ?? ""
        let email = form["email"] ?? ""
        // One normal form for passwords, so the same password typed either way verifies.
        let password = (form["password"] ?? "").precomposedStringWithCanonicalMapping
        let confirm = (form["confirm"] ?? "").precomposedStringWithCanonicalMapping

        guard let token = form["token"], let session = sessions.session(for: token) else {
            return rerender(username: username, email: email, evaluation: nil, status: .unprocessableContent,
                            formError: "This form had expired, so nothing was saved. Check your details and submit again.")
        }
        if session.createdAccountUsername != nil {
            return alreadyUsed(username: username, email: email)
        }

        // The browser's button state is never trusted: check everything again, with the same
        // rules the live view model uses.
        let availability: RequirementState
        do {
            availability = try self.availability.availabilityNow(of: username)
        } catch {
            logger.error("Account store unavailable during sign-up", metadata: ["error": "\(error)"])
            return unavailable(username: username, email: email)
        }
        let evaluation = policy.evaluateSubmission(
            username: username, email: email, password: password, confirm: confirm,
            usernameAvailability: availability)
        guard evaluation.isValid else {
            return rerender(username: username, email: email, evaluation: evaluation,
                            session: session, status: .unprocessableContent)
        }

        return .later { [self] respond in
            hashing.hash(password) { result in
                respond(finishSignup(result, username: username, email: email, session: session))
            }
        }
    }

    /// Stores the account once its password is hashed (runs on the hashing queue).
    private func finishSignup(_ hash: Result<String, Error>, username: String, email: String, session: FormSession) -> HTTPResponse {
        let passwordHash: String
        switch hash {
        case .success(let value): passwordHash = value
        case .failure(let error):
            logger.error("Password hashing failed", metadata: ["error": "\(error)"])
            return unavailable(username: username, email: email)
        }
        do {
            let account = try store.createAccount(
                NewAccount(username: username, email: email, passwordHash: passwordHash, formToken: session.token))
            session.markAccountCreated(username: account.username)
            logger.info("Account created", metadata: ["account": "\(account.id)"])
            return redirect(to: "/welcome", cookie: signedIn.signIn(username: account.username))
        } catch AccountCreationError.formAlreadyUsed {
            return alreadyUsed(username: username, email: email)
        } catch AccountCreationError.usernameTaken {
            // Someone else got the name between the check and the insert.
            let evaluation = policy.evaluateSubmission(
                username: username, email: email, password: "", confirm: "", usernameAvailability: .unmet)
            let usernameOnly = evaluation.problems.filter { $0.field == .username }
            return rerender(username: username, email: email, evaluation: evaluation, errors: usernameOnly,
                            session: session, status: .unprocessableContent)
        } catch {
            logger.error("Account store failed during sign-up", metadata: ["error": "\(error)"])
            return unavailable(username: username, email: email)
        }
    }

    private func alreadyUsed(username: String, email: String) -> HTTPResponse {
        rerender(username: username, email: email, evaluation: nil, status: .conflict,
                 formError: "This form was already used to create an account. Sign in, or create another account below.")
    }

    private func unavailable(username: String, email: String) -> HTTPResponse {
        rerender(username: username, email: email, evaluation: nil, status: .serviceUnavailable,
                 formError: "Something went wrong on our side and nothing was saved. Please try again in a moment.")
    }

    /// The sign-up page again, with the person's username and email (never passwords), an
    /// error summary and each field's message. Uses `session` when it is still usable,
    /// otherwise a fresh one, so the live page keeps working after the reload.
    private func rerender(
        username: String, email: String, evaluation: FormEvaluation?,
        errors: [(field: SignupField, message: String)]? = nil,
        session: FormSession? = nil, status: HTTPStatus, formError: String = ""
    ) -> HTTPResponse {
        let target: FormSession
        if let session {
            target = session
        } else if let fresh = try? sessions.create() {
            target = fresh
        } else {
            return tooManySessions()
        }
        target.prepareForResubmission(username: username, email: email)
        let states = evaluation?.requirementStates
            ?? Dictionary(uniqueKeysWithValues: policy.allRequirements.map { ($0.id, .unmet) })
        let problems = errors ?? evaluation?.problems ?? []
        let page = PageRenderer.SignupPage(
            token: target.token,
            values: [.username: username, .email: email],
            requirementStates: states,
            messages: Dictionary(problems.map { ($0.field, $0.message) }, uniquingKeysWith: { first, _ in first }),
            strength: .none,
            errors: problems,
            formError: formError)
        return html(renderer.renderSignup(page, policy: policy, assets: assets), status: status)
    }

    // MARK: GET /welcome

    func welcome(_ request: HTTPRequest) -> HTTPResponse {
        guard let username = signedIn.username(cookieHeader: request.headers["Cookie"]) else {
            return redirect(to: "/signin")
        }
        return html(renderer.renderWelcome(username: username, assets: assets), status: .ok)
    }
}

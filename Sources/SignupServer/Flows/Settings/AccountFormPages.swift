import Identity
import MicroHTTPD
import SignupDomain
import WebKernel

/// The live forms about a signed-in account (`/account/password`, `/account/email`): the page
/// with its live session, and a fresh session for the page's script (`data-session-url`), in
/// one place. Their sessions are not signed form tokens (`LiveFormSessionRegistry
/// .startNewPasswordSession`): a dropped one is asked for again here, never rebuilt as a
/// sign-up form.
struct AccountFormPages: Sendable {
    let sessions: LiveFormSessionRegistry
    let refusals: Refusals

    /// What a form is for one account in one language: its rules and, on a new-password form
    /// of an account that has one, the live "not your current password" check.
    typealias Rules = @Sendable (_ account: Account, _ language: Languages.Language)
        -> (policy: FormPolicy, currentPassword: (any CurrentPasswordChecking)?)

    /// A new password's form for an account (a recovery's, a change's): the account's own
    /// words refused, and "not your current password" checked live when it has one (a hash
    /// per pause, in the sign-in lane, charged to `client`).
    /// `lifeline`: what opened the form (a recovery, a signed-in session); the live check
    /// answers only while it is open.
    static func newPasswordRules(hashing: PasswordHashingQueue, client: String, lifeline: CurrentPasswordCheck.Lifeline) -> Rules {
        { account, language in
            (language.policy.newPassword(for: .init(of: account)),
             account.hasPassword ? CurrentPasswordCheck(hash: account.passwordHash, hashing: hashing, client: client,
                                                        lifeline: lifeline) : nil)
        }
    }

    /// `POST …/session`: `201 {"token": …}` for the form in the page's language (JSON rows
    /// negotiate none: the script names it, `?lang=`).
    func renewSession(_ request: RequestContext, rules: Rules) throws -> HTTPResponse {
        try request.forAccount { freshSession(request, for: $0, rules: rules) }
    }

    /// `201 {"token": …}`: a new live session for the page's form about `account`, in the
    /// page's language (a JSON row negotiates none: the script names it, `?lang=`). Refused as
    /// the sign-up form's `POST /sessions` is: the per-address sessions limit spent is its 429,
    /// a registry that is full a 503 `too_many_sessions`.
    func freshSession(_ request: RequestContext, for account: Account, rules: Rules) -> HTTPResponse {
        let language = request.pages.visitorLanguage(request.http, requested: request.http.queryValue("lang"))
        let form = rules(account, language)
        do throws(LiveFormSessionRegistry.LookupError) {
            let token = try sessions.startNewPasswordSession(form.policy, currentPassword: form.currentPassword,
                                                             language: language.tag, address: request.client)
            var response = HTTPResponse.json("{\"token\":\"\(token)\"}", status: .created)
            response.headers.add("Cache-Control", "no-store")
            return response
        } catch {
            switch error {
            case .limited(let exceeded): return refusals.limited(exceeded)
            case .unknown, .full:
                return APIError(status: .serviceUnavailable, code: "too_many_sessions",
                                message: "Too many forms are open. Please try again in a minute.", retryAfter: 60).response
            }
        }
    }

    /// The form's page with a live session of its own (none when the session limits refuse
    /// one: the form still works, the server checks on submit), `values` kept, `problems`
    /// shown at their fields and `formError` above them.
    func page(_ request: RequestContext, for account: Account, rules: Rules, purpose: SignupPage.AccountForm,
              values: [SignupField: String] = [:], problems: [(field: SignupField, message: String)] = [],
              formError: String = "", status: HTTPStatus) -> HTTPResponse {
        let form = rules(account, request.language)
        let token: String
        do throws(LiveFormSessionRegistry.LookupError) {
            token = try sessions.startNewPasswordSession(form.policy, currentPassword: form.currentPassword,
                                                         language: request.language.tag, address: request.client)
        } catch {
            token = ""
        }
        var page = SignupPage(
            token: token, values: values, requirementStates: form.policy.initialEvaluation.requirementStates,
            messages: Dictionary(uniqueKeysWithValues: problems.map { ($0.field, $0.message) }), strength: .none)
        page.errors = problems
        page.formError = formError
        page.purpose = .accountForm(purpose)
        page.policy = form.policy
        return request.page(page, status: status)
    }
}

extension SignupPage.AccountForm {
    /// A change of password (`/account/password`).
    static func change(username: String, hasPassword: Bool, message: String = "") -> SignupPage.AccountForm {
        SignupPage.AccountForm(username: username, action: "/account/password", sessionURL: "/account/password/session",
                    title: hasPassword ? "account.password_title" : "account.set_password_title",
                    lead: "account.password_lead", submit: "account.password_submit",
                    asksCurrentPassword: hasPassword, currentPasswordMessage: message)
    }
}

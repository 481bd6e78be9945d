import Foundation
import Identity
import SignupDomain

/// The keys the seeds in Tests/Fuzz/corpus/link-code were made with (`signup-fuzz seed`).
enum FuzzKeys {
    static let formTokens = FormTokenAuthority(key: [UInt8](repeating: 5, count: 32), instance: "web1")
    static let seal = SecondFactorSeal(key: [UInt8](repeating: 6, count: 32))
    static let totp = TOTP(secret: Array("12345678901234567890".utf8))
    static let now = FuzzResources.now
}

extension FuzzTarget {
    /// What arrives in a mailed link, a code field or a form: the shapes are checked before any
    /// look-up, and signed tokens are ours in exactly one spelling.
    static let linkCode = FuzzTarget(
        name: "link-code",
        summary: "link tokens, mailed codes, form tokens, TOTP and recovery codes, second-step tokens",
        seeds: {
            let step = SecondFactorSeal.SecondStep(account: 42, issuedAt: FuzzKeys.now.addingTimeInterval(-10), returnTo: "/account")
            return [
                ("link", VerificationSecrets.makeLinkToken()),
                ("code", "123 456"), ("code-dashed", "123-456"),
                ("form-token", FuzzKeys.formTokens.mint(issuedAt: FuzzKeys.now)),
                ("totp", FuzzKeys.totp.code(atStep: TOTP.step(at: FuzzKeys.now))),
                ("totp-ahead", FuzzKeys.totp.code(atStep: TOTP.step(at: FuzzKeys.now) + 3)),
                ("recovery", SecondFactorSeal.makeRecoveryCodes(count: 1)[0]),
                ("second-step", FuzzKeys.seal.stepToken(step)),
            ].map { ($0.0, Array($0.1.utf8)) }
        }
    ) { input in
        let text = input.text
        // Mailed links and session ids: 43 URL-safe base64 characters, nothing else.
        let reference = text.utf8.count == 43 && text.utf8.allSatisfy {
            (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95
        }
        fuzzCheck(text.isRandomToken == reference, "isRandomToken disagrees with its definition")

        // The mailed six digits, however spaced.
        if let code = VerificationCodeShape.normalized(text) {
            fuzzCheck(code.utf8.count == 6 && code.utf8.allSatisfy { (48...57).contains($0) }, "a code that is not six ASCII digits")
            fuzzCheck(VerificationCodeShape.normalized(code) == code, "normalizing a code twice changed it")
        }

        // A form token this instance minted, in the one spelling it minted.
        if let issue = FuzzKeys.formTokens.issue(of: text) {
            fuzzCheck(text == FuzzKeys.formTokens.mint(issuedAt: issue.date) || text.utf8.count == issue.instance.utf8.count + 57
                      && text.utf8.starts(with: (issue.instance + ".").utf8)
                      && text.utf8.dropFirst(issue.instance.utf8.count + 1).allSatisfy { (48...57).contains($0) || (97...102).contains($0) },
                      "a form token accepted in another spelling: \(Array(text.utf8))")
        }

        // An app's code: only six ASCII digits can match, and only the code of a step near now.
        switch FuzzKeys.totp.match(text, at: FuzzKeys.now) {
        case .accepted(let step), .clockOff(let step, _):
            let digits = text.filter { !$0.isWhitespace }
            fuzzCheck(digits == FuzzKeys.totp.code(atStep: step), "a code accepted for a step it is not the code of")
            fuzzCheck(abs(step - TOTP.step(at: FuzzKeys.now)) <= 10, "a step far from now")
        case .wrong: break
        }

        // A recovery code: case, spaces and hyphens aside, the same code.
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            fuzzCheck(FuzzKeys.seal.recoveryCodeHash(text, account: 1)
                      == FuzzKeys.seal.recoveryCodeHash(text.uppercased().replacingOccurrences(of: "-", with: " "), account: 1),
                      "a recovery code's hash depends on case or hyphens")
        }

        // The second step's token: ours, whole, in the one spelling made.
        if let step = FuzzKeys.seal.openStepToken(text, now: FuzzKeys.now, lifetime: 300) {
            fuzzCheck(FuzzKeys.seal.stepToken(step) == text, "a second-step token accepted in another spelling: \(text)")
        }
    }
}

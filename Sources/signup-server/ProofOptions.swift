import ArgumentParser
import Foundation
import SignupServer

/// The proof of work sign-ups pay (ALTCHA-format challenges), and how its price moves.
struct ProofOptions: ParsableArguments {
    @Option(help: help("proof-of-work"))
    var proofOfWork = "on"

    @Option(help: help("proof-base-cost"))
    var proofBaseCost = ProofOfWorkSettings().baseCost

    @Option(help: help("proof-level-factor"))
    var proofLevelFactor = ProofOfWorkSettings().levelFactor

    @Option(help: help("proof-max-level"))
    var proofMaxLevel = ProofOfWorkSettings().maximumLevel

    @Option(help: help("proof-lifetime-minutes"))
    var proofLifetimeMinutes = Int(ProofOfWorkSettings().lifetime / 60)

    @Option(help: help("proof-plausible-seconds"))
    var proofPlausibleSeconds = Int(ProofOfWorkSettings().plausibleSeconds)

    @Option(help: help("proof-half-life-minutes"))
    var proofHalfLifeMinutes = Int(ProofOfWorkSettings().pressureHalfLife / 60)

    @Option(help: help("normal-signups-per-minute"))
    var normalSignupsPerMinute = ProofOfWorkSettings().normalSignupsPerMinute

    func validate() throws {
        guard ["on", "off"].contains(proofOfWork) else { throw ValidationError("--proof-of-work is on or off, not '\(proofOfWork)'.") }
        guard (1...100_000_000).contains(proofBaseCost) else { throw ValidationError("--proof-base-cost must be 1 to 100000000.") }
        guard (1...64).contains(proofLevelFactor) else { throw ValidationError("--proof-level-factor must be 1 to 64.") }
        guard (0...8).contains(proofMaxLevel) else { throw ValidationError("--proof-max-level must be 0 to 8.") }
        guard (1...24 * 60).contains(proofLifetimeMinutes) else { throw ValidationError("--proof-lifetime-minutes must be 1 to 1440.") }
        guard (0...600).contains(proofPlausibleSeconds) else { throw ValidationError("--proof-plausible-seconds must be 0 to 600.") }
        guard (1...24 * 60).contains(proofHalfLifeMinutes) else { throw ValidationError("--proof-half-life-minutes must be 1 to 1440.") }
        guard normalSignupsPerMinute > 0, normalSignupsPerMinute.isFinite else {
            throw ValidationError("--normal-signups-per-minute must be above 0.")
        }
    }

    /// The settings the flags say; nil when proofs are off.
    var settings: ProofOfWorkSettings? {
        guard proofOfWork == "on" else { return nil }
        var settings = ProofOfWorkSettings()
        settings.baseCost = proofBaseCost
        settings.levelFactor = proofLevelFactor
        settings.maximumLevel = proofMaxLevel
        settings.lifetime = TimeInterval(proofLifetimeMinutes * 60)
        settings.plausibleSeconds = TimeInterval(proofPlausibleSeconds)
        settings.pressureHalfLife = TimeInterval(proofHalfLifeMinutes * 60)
        settings.normalSignupsPerMinute = normalSignupsPerMinute
        return settings
    }

    /// `LIVESIGNUP_PROOF_KEY`: the HMAC key as text (its UTF-8 bytes, as ALTCHA libraries take
    /// a key), for instances or tools that must share it; nil uses the account store's.
    static func keyFromEnvironment() throws -> [UInt8]? {
        guard let text = try ConfigurationSources.secret(.proofOfWorkKey), !text.isEmpty else { return nil }
        guard text.utf8.count >= 16 else { throw ValidationError("LIVESIGNUP_PROOF_KEY must be at least 16 bytes long.") }
        return Array(text.utf8)
    }
}

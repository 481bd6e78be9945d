import Foundation

/// Username text rules shared by the policy and the store.
public enum Username {
    /// The form compared for uniqueness: Unicode NFKC with case folding, so "Alice",
    /// "ALICE" and full-width "Ａｌｉｃｅ" are one name.
    public static func canonical(_ username: String) -> String {
        // ASCII is its own NFKC and folds by lower-casing; Foundation's Unicode path goes
        // through NSString, which cost a few percent of an edit where it ran per keystroke.
        if username.utf8.allSatisfy({ $0 < 0x80 }) { return username.lowercased() }
        return username.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping
    }
}

// The client speaks the server's own vocabulary: `SignupEvent`, `SignupSnapshot`,
// `PasswordStrength`, `RequirementState`, `EditReceipt`, `ServerSentEvent` come from the wire
// modules and are re-exported, so programs import LiveSignupClient only.
@_exported import FormWire
@_exported import SignupWire

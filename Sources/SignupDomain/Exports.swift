// `PasswordStrength` (and requirement states) in this module's API are the wire's types:
// re-exported so users of SignupDomain see them without importing the wire modules.
@_exported import FormWire
@_exported import SignupWire

// Rules compute `RequirementState`, the same type the wire carries: re-exported so users of
// ReactiveValidation need not import FormWire themselves.
@_exported import FormWire

#ifndef UNICODE_SPOOF_SHIMS_H
#define UNICODE_SPOOF_SHIMS_H

#include <stdint.h>

/// The failed checks of ICU's spoof checker (UTS #39) for one UTF-8 identifier, as a
/// USpoofChecks bitmask: 16 restriction level (mixed scripts), 32 invisible characters,
/// 128 mixed number systems, 256 hidden overlay. 0 means it passed; -1 an ICU error.
/// Thread-safe: the checker is configured once and only read afterwards.
int32_t unicode_spoof_check(const char *utf8, int32_t length);

/// Writes the confusable skeleton of a UTF-8 string (UTS #39: "pаypal" and "paypal" share
/// one) into `destination`, NUL-terminated. Returns the skeleton's length in bytes (when it
/// is `capacity` or more, call again with a buffer of at least that plus one), or -1 on an
/// ICU error.
int32_t unicode_spoof_skeleton(const char *utf8, int32_t length, char *destination, int32_t capacity);

#endif

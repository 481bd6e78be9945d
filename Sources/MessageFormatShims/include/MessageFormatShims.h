#ifndef MESSAGE_FORMAT_SHIMS_H
#define MESSAGE_FORMAT_SHIMS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One named argument of a message: a whole number (plurals, grouped digits) or text.
typedef struct message_argument {
    const char *name;
    int is_number;
    int64_t number;
    const char *text;
} message_argument;

/// Formats an ICU MessageFormat `pattern` ("{n, plural, one {# minute} other {# minutes}}")
/// for `locale` ("pl", "ar", "pt-BR") with named arguments, as UTF-8 into `out`. Returns the
/// length written (without the terminating 0), the length needed when `capacity` is too small
/// (nothing written), or -1 when the pattern is not valid MessageFormat.
int32_t message_format(const char *pattern, const char *locale, const message_argument *arguments, int32_t count,
                       char *out, int32_t capacity);

/// The CLDR plural categories `locale` uses ("one other", "zero one two few many other"),
/// space-separated, into `out`; the length, or -1.
int32_t message_plural_categories(const char *locale, char *out, int32_t capacity);

/// The plural category of `number` in `locale` ("one", "few", …) into `out`; the length, or -1.
int32_t message_plural_category(const char *locale, double number, char *out, int32_t capacity);

#ifdef __cplusplus
}
#endif

#endif

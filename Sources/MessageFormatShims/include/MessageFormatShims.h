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

/// `milliseconds` since 1970 as the language writes a date and time: ICU's own pattern for
/// the skeleton "yMMMdjmmz" in `locale` (day, abbreviated month, year, the language's hour
/// cycle, the zone where the language puts it), in `zone` ("UTC"). The length, or -1.
int32_t message_format_date(double milliseconds, const char *locale, const char *zone, char *out, int32_t capacity);

/// `items` (UTF-8) joined as the language joins a list ("a, b, and c", "a、b和c"): ICU's
/// ListFormatter for `locale`. The length, or -1.
int32_t message_format_list(const char *locale, const char *const *items, int32_t count, char *out, int32_t capacity);

#ifdef __cplusplus
}
#endif

#endif

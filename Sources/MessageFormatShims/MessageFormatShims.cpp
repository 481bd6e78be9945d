// ICU's MessageFormat (Debian's libicu-dev), behind a C face Swift can call: ICU's C++ API
// and its version-renamed C functions are out of Swift's reach.
#include "MessageFormatShims.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <unicode/dtptngen.h>
#include <unicode/fmtable.h>
#include <unicode/listformatter.h>
#include <unicode/smpdtfmt.h>
#include <unicode/timezone.h>
#include <unicode/locid.h>
#include <unicode/msgfmt.h>
#include <unicode/uenum.h>
#include <unicode/unistr.h>
#include <unicode/upluralrules.h>

static int32_t copy_out(const std::string &text, char *out, int32_t capacity) {
    int32_t length = (int32_t) text.size();
    if (length + 1 > capacity) return length + 1;
    std::memcpy(out, text.data(), (size_t) length);
    out[length] = 0;
    return length;
}

extern "C" int32_t message_format(const char *pattern, const char *locale, const message_argument *arguments, int32_t count,
                                  char *out, int32_t capacity) {
    UErrorCode status = U_ZERO_ERROR;
    icu::MessageFormat format(icu::UnicodeString::fromUTF8(pattern), icu::Locale(locale), status);
    if (U_FAILURE(status)) return -1;
    std::vector<icu::UnicodeString> names;
    std::vector<icu::Formattable> values;
    names.reserve((size_t) count);
    values.reserve((size_t) count);
    for (int32_t index = 0; index < count; index++) {
        names.push_back(icu::UnicodeString::fromUTF8(arguments[index].name));
        if (arguments[index].is_number) {
            values.push_back(icu::Formattable(arguments[index].number));
        } else {
            values.push_back(icu::Formattable(icu::UnicodeString::fromUTF8(arguments[index].text ? arguments[index].text : "")));
        }
    }
    icu::UnicodeString result;
    format.format(names.data(), values.data(), count, result, status);
    if (U_FAILURE(status)) return -1;
    std::string utf8;
    result.toUTF8String(utf8);
    return copy_out(utf8, out, capacity);
}

extern "C" int32_t message_plural_categories(const char *locale, char *out, int32_t capacity) {
    UErrorCode status = U_ZERO_ERROR;
    UPluralRules *rules = uplrules_open(locale, &status);
    if (U_FAILURE(status)) return -1;
    UEnumeration *keywords = uplrules_getKeywords(rules, &status);
    std::string joined;
    if (U_SUCCESS(status)) {
        const char *keyword;
        int32_t length;
        while ((keyword = uenum_next(keywords, &length, &status)) != nullptr && U_SUCCESS(status)) {
            if (!joined.empty()) joined += " ";
            joined.append(keyword, (size_t) length);
        }
        uenum_close(keywords);
    }
    uplrules_close(rules);
    if (U_FAILURE(status)) return -1;
    return copy_out(joined, out, capacity);
}

extern "C" int32_t message_plural_category(const char *locale, double number, char *out, int32_t capacity) {
    UErrorCode status = U_ZERO_ERROR;
    UPluralRules *rules = uplrules_open(locale, &status);
    if (U_FAILURE(status)) return -1;
    UChar keyword[32];
    int32_t length = uplrules_select(rules, number, keyword, 32, &status);
    uplrules_close(rules);
    if (U_FAILURE(status)) return -1;
    std::string utf8;
    icu::UnicodeString(keyword, length).toUTF8String(utf8);
    return copy_out(utf8, out, capacity);
}

// Making a date format means loading the locale's data and running the pattern generator
// (about a millisecond); using one is microseconds. One per locale and zone, made on first use
// and kept (bounded by the languages the server speaks); ICU formats are not documented as
// safe to share between threads, so each is used under the lock.
static std::mutex date_formats_lock;
static std::map<std::string, std::unique_ptr<icu::SimpleDateFormat>> date_formats;

extern "C" int32_t message_format_date(double milliseconds, const char *locale, const char *zone, char *out, int32_t capacity) {
    std::lock_guard<std::mutex> guard(date_formats_lock);
    std::string key = std::string(locale) + "|" + zone;
    auto found = date_formats.find(key);
    if (found == date_formats.end()) {
        UErrorCode status = U_ZERO_ERROR;
        icu::Locale where(locale);
        std::unique_ptr<icu::DateTimePatternGenerator> generator(icu::DateTimePatternGenerator::createInstance(where, status));
        if (U_FAILURE(status)) return -1;
        icu::UnicodeString pattern = generator->getBestPattern(icu::UnicodeString("yMMMdjmmz"), status);
        if (U_FAILURE(status)) return -1;
        auto format = std::make_unique<icu::SimpleDateFormat>(pattern, where, status);
        if (U_FAILURE(status)) return -1;
        format->adoptTimeZone(icu::TimeZone::createTimeZone(icu::UnicodeString::fromUTF8(zone)));
        found = date_formats.emplace(key, std::move(format)).first;
    }
    icu::UnicodeString result;
    found->second->format((UDate) milliseconds, result);
    std::string utf8;
    result.toUTF8String(utf8);
    return copy_out(utf8, out, capacity);
}

extern "C" int32_t message_format_list(const char *locale, const char *const *items, int32_t count, char *out, int32_t capacity) {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::ListFormatter> formatter(icu::ListFormatter::createInstance(icu::Locale(locale), status));
    if (U_FAILURE(status)) return -1;
    std::vector<icu::UnicodeString> strings;
    strings.reserve((size_t) count);
    for (int32_t index = 0; index < count; index++) strings.push_back(icu::UnicodeString::fromUTF8(items[index]));
    icu::UnicodeString result;
    formatter->format(strings.data(), count, result, status);
    if (U_FAILURE(status)) return -1;
    std::string utf8;
    result.toUTF8String(utf8);
    return copy_out(utf8, out, capacity);
}

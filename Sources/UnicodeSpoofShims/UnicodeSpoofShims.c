#include "UnicodeSpoofShims.h"

#include <pthread.h>
#include <unicode/uspoof.h>

static USpoofChecker *checker;
static pthread_once_t checker_once = PTHREAD_ONCE_INIT;

static void open_checker(void) {
    UErrorCode status = U_ZERO_ERROR;
    USpoofChecker *opened = uspoof_open(&status);
    // Moderately restrictive (UTS #39 5.2): one script, or Latin with one other script that
    // is not Cyrillic, Greek or Cherokee (the ones with Latin look-alikes). Japanese
    // (Han + Hiragana + Katakana) counts as one.
    uspoof_setRestrictionLevel(opened, USPOOF_MODERATELY_RESTRICTIVE);
    uspoof_setChecks(opened, USPOOF_RESTRICTION_LEVEL | USPOOF_INVISIBLE | USPOOF_MIXED_NUMBERS
                     | USPOOF_HIDDEN_OVERLAY, &status);
    if (U_FAILURE(status)) {
        uspoof_close(opened);
        return;
    }
    checker = opened;
}

int32_t unicode_spoof_check(const char *utf8, int32_t length) {
    pthread_once(&checker_once, open_checker);
    if (checker == NULL) { return -1; }
    UErrorCode status = U_ZERO_ERROR;
    int32_t result = uspoof_check2UTF8(checker, utf8, length, NULL, &status);
    return U_FAILURE(status) ? -1 : (result & USPOOF_ALL_CHECKS);
}

int32_t unicode_spoof_skeleton(const char *utf8, int32_t length, char *destination, int32_t capacity) {
    pthread_once(&checker_once, open_checker);
    if (checker == NULL) { return -1; }
    UErrorCode status = U_ZERO_ERROR;
    int32_t needed = uspoof_getSkeletonUTF8(checker, 0, utf8, length, destination, capacity, &status);
    if (status == U_BUFFER_OVERFLOW_ERROR || status == U_STRING_NOT_TERMINATED_WARNING) { return needed; }
    return U_FAILURE(status) ? -1 : needed;
}

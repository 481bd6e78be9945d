#include "CurlShims.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void curl_shim_global_init(void) { pthread_once(&global_once, global_init_once); }

/* The share's lock callbacks: one mutex per kind of shared data. */
typedef struct { CURLSH *share; pthread_mutex_t locks[CURL_LOCK_DATA_LAST]; } share_state;

static void share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr) {
    (void) handle; (void) access;
    pthread_mutex_lock(&((share_state *) userptr)->locks[data]);
}

static void share_unlock(CURL *handle, curl_lock_data data, void *userptr) {
    (void) handle;
    pthread_mutex_unlock(&((share_state *) userptr)->locks[data]);
}

void *curl_shim_share_create(void) {
    curl_shim_global_init();
    share_state *state = calloc(1, sizeof *state);
    if (state == NULL) return NULL;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&state->locks[i], NULL);
    state->share = curl_share_init();
    if (state->share == NULL) { free(state); return NULL; }
    curl_share_setopt(state->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(state->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(state->share, CURLSHOPT_USERDATA, state);
    curl_share_setopt(state->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(state->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    /* Not CURL_LOCK_DATA_CONNECT: libcurl does not support sharing connections between
       concurrent threads (CURLSHOPT_SHARE(3)). Each get opens its own connection; TLS
       session resumption keeps that cheap. */
    return state;
}

typedef struct {
    CURL *handle;
    curl_shim_get_result *result;
    size_t max_bytes;
    size_t capacity;
    int refused; /* the write callback stopped the transfer: outcome already set */
    int read_any_status;
} transfer;

/* Keeps the Cache-Control header's value (a cached JWKS or discovery document lives as long
   as it says). Every other header is ignored. */
static size_t receive_header(char *data, size_t size, size_t count, void *userdata) {
    transfer *t = userdata;
    size_t bytes = size * count;
    static const char name[] = "cache-control:";
    size_t name_length = sizeof name - 1;
    if (bytes > name_length && strncasecmp(data, name, name_length) == 0) {
        size_t start = name_length, end = bytes;
        while (start < end && (data[start] == ' ' || data[start] == '\t')) start++;
        while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' ')) end--;
        size_t length = end - start;
        if (length > sizeof t->result->cache_control - 1) length = sizeof t->result->cache_control - 1;
        memcpy(t->result->cache_control, data + start, length);
        t->result->cache_control[length] = 0;
    }
    return bytes;
}

static size_t receive(char *data, size_t size, size_t count, void *userdata) {
    transfer *t = userdata;
    size_t bytes = size * count;
    if (t->result->length == 0 && t->capacity == 0) {
        /* The first bytes of the body: the status is known by now. Not 2xx: read no further. */
        long status = 0;
        curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
        if ((status < 200 || status > 299) && !t->read_any_status) {
            t->result->outcome = CURL_SHIM_STATUS;
            t->refused = 1;
            return 0;
        }
    }
    if (bytes > t->max_bytes - t->result->length) {
        t->result->outcome = CURL_SHIM_TOO_LARGE;
        t->refused = 1;
        return 0; /* libcurl aborts the transfer and closes the connection */
    }
    if (t->result->length + bytes > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 16384;
        while (capacity < t->result->length + bytes) capacity *= 2;
        if (capacity > t->max_bytes) capacity = t->max_bytes;
        unsigned char *grown = realloc(t->result->body, capacity);
        if (grown == NULL) {
            t->result->outcome = CURL_SHIM_TOO_LARGE;
            t->refused = 1;
            return 0;
        }
        t->result->body = grown;
        t->capacity = capacity;
    }
    memcpy(t->result->body + t->result->length, data, bytes);
    t->result->length += bytes;
    return bytes;
}

curl_shim_outcome curl_shim_get(const curl_shim_get_request *request, void *share, curl_shim_get_result *result) {
    curl_shim_global_init();
    memset(result, 0, sizeof *result);
    CURL *handle = curl_easy_init();
    if (handle == NULL) {
        result->outcome = CURL_SHIM_UNREACHABLE;
        strncpy(result->error, "libcurl could not start a transfer", sizeof result->error - 1);
        return result->outcome;
    }
    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < request->header_count; i++) headers = curl_slist_append(headers, request->headers[i]);
    transfer t = { handle, result, request->max_bytes, 0, 0, request->read_any_status };
    char error[CURL_ERROR_SIZE] = { 0 };

    curl_easy_setopt(handle, CURLOPT_URL, request->url);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
    /* Threads: no signals for timeouts (they would hit whichever thread). */
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    /* The whole exchange, however slowly the bytes arrive. */
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, request->timeout_ms);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, request->timeout_ms);
    /* A declared Content-Length over the cap is refused before the body. */
    curl_easy_setopt(handle, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) request->max_bytes);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, receive);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, receive_header);
    curl_easy_setopt(handle, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
    if (share != NULL) curl_easy_setopt(handle, CURLOPT_SHARE, ((share_state *) share)->share);
    if (request->body != NULL) {
        curl_easy_setopt(handle, CURLOPT_POST, 1L);
        curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request->body);
        curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) request->body_length);
    }

    CURLcode code = curl_easy_perform(handle);
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &result->status);
    if (t.refused) {
        /* Set by the write callback. */
    } else if (code == CURLE_OK) {
        result->outcome = (result->status >= 200 && result->status <= 299) || request->read_any_status
            ? CURL_SHIM_OK : CURL_SHIM_STATUS;
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
        result->outcome = CURL_SHIM_TIMED_OUT;
    } else if (code == CURLE_FILESIZE_EXCEEDED) {
        result->outcome = CURL_SHIM_TOO_LARGE;
    } else {
        result->outcome = CURL_SHIM_UNREACHABLE;
        strncpy(result->error, error[0] ? error : curl_easy_strerror(code), sizeof result->error - 1);
    }
    curl_easy_cleanup(handle);
    curl_slist_free_all(headers);
    if (result->outcome != CURL_SHIM_OK) {
        free(result->body);
        result->body = NULL;
        result->length = 0;
    }
    return result->outcome;
}

void curl_shim_free_result(curl_shim_get_result *result) {
    free(result->body);
    result->body = NULL;
    result->length = 0;
}

int curl_shim_send_mail(const curl_shim_mail *mail, long *response_code, char *error, size_t error_capacity) {
    curl_shim_global_init();
    CURL *handle = curl_easy_init();
    if (handle == NULL) {
        if (error) snprintf(error, error_capacity, "libcurl could not start a transfer");
        return -1;
    }
    char words[CURL_ERROR_SIZE] = { 0 };
    struct curl_slist *recipients = curl_slist_append(NULL, mail->envelope_to);
    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < mail->header_count; i++) headers = curl_slist_append(headers, mail->headers[i]);

    /* multipart/alternative inside the message, as libcurl's own smtp-mime example builds it. */
    curl_mime *message = curl_mime_init(handle);
    curl_mime *alternatives = curl_mime_init(handle);
    curl_mimepart *part = curl_mime_addpart(alternatives);
    curl_mime_data(part, mail->text, CURL_ZERO_TERMINATED);
    curl_mime_type(part, "text/plain; charset=utf-8");
    curl_mime_encoder(part, "quoted-printable");
    part = curl_mime_addpart(alternatives);
    curl_mime_data(part, mail->html, CURL_ZERO_TERMINATED);
    curl_mime_type(part, "text/html; charset=utf-8");
    curl_mime_encoder(part, "quoted-printable");
    part = curl_mime_addpart(message);
    curl_mime_subparts(part, alternatives);
    curl_mime_type(part, "multipart/alternative");
    struct curl_slist *inline_header = curl_slist_append(NULL, "Content-Disposition: inline");
    curl_mime_headers(part, inline_header, 1);

    curl_easy_setopt(handle, CURLOPT_URL, mail->url);
    curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, mail->timeout_ms);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, mail->timeout_ms);
    curl_easy_setopt(handle, CURLOPT_USE_SSL, mail->require_tls ? (long) CURLUSESSL_ALL : (long) CURLUSESSL_TRY);
    if (mail->ca_file != NULL) curl_easy_setopt(handle, CURLOPT_CAINFO, mail->ca_file);
    if (mail->username != NULL) {
        curl_easy_setopt(handle, CURLOPT_USERNAME, mail->username);
        curl_easy_setopt(handle, CURLOPT_PASSWORD, mail->password ? mail->password : "");
    }
    curl_easy_setopt(handle, CURLOPT_MAIL_FROM, mail->envelope_from);
    curl_easy_setopt(handle, CURLOPT_MAIL_RCPT, recipients);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(handle, CURLOPT_MIMEPOST, message);
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, words);

    CURLcode code = curl_easy_perform(handle);
    if (code != CURLE_OK && error) {
        snprintf(error, error_capacity, "%s", words[0] ? words : curl_easy_strerror(code));
    }
    if (response_code != NULL) {
        long last = 0;
        curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &last);
        *response_code = last;
    }
    curl_slist_free_all(recipients);
    curl_slist_free_all(headers);
    curl_mime_free(message);
    curl_easy_cleanup(handle);
    return (int) code;
}

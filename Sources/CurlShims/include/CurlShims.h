#ifndef CURL_SHIMS_H
#define CURL_SHIMS_H

#include <stddef.h>

/// One GET (or POST) with every cost bounded, through libcurl's easy interface (whose setopt is
/// C-variadic, which Swift cannot call). Blocks the calling thread for at most `timeout_ms`.
typedef struct curl_shim_get_request {
    const char *url;
    /// "Name: value" lines, `header_count` of them.
    const char *const *headers;
    size_t header_count;
    /// From the start to the last byte of the body; also bounds connecting.
    long timeout_ms;
    /// Bytes of body accepted; a larger declared Content-Length is refused before the body.
    size_t max_bytes;
    /// NULL for a GET; otherwise a POST of these `body_length` bytes.
    const unsigned char *body;
    size_t body_length;
    /// Nonzero: a non-2xx answer's body is read too (up to `max_bytes`) and the outcome is
    /// CURL_SHIM_OK with its status, for sources whose errors are JSON (OAuth's token endpoint).
    int read_any_status;
} curl_shim_get_request;

typedef enum curl_shim_outcome {
    CURL_SHIM_OK = 0,
    /// Status other than 2xx (in `status`); the body is not read.
    CURL_SHIM_STATUS = 1,
    /// The body is, or said it would be, larger than `max_bytes`.
    CURL_SHIM_TOO_LARGE = 2,
    CURL_SHIM_TIMED_OUT = 3,
    /// Could not connect, resolve, or the connection broke (see `error`).
    CURL_SHIM_UNREACHABLE = 4,
} curl_shim_outcome;

typedef struct curl_shim_get_result {
    curl_shim_outcome outcome;
    long status;
    /// The body (malloc'd, at most max_bytes; free with curl_shim_free_result).
    unsigned char *body;
    size_t length;
    /// libcurl's words for a failure.
    char error[256];
    /// The answer's Cache-Control header's value (the last one), cut at 255 bytes; empty if none.
    char cache_control[256];
} curl_shim_get_result;

/// Initialises libcurl once for the process (thread-safe); call before the first get.
void curl_shim_global_init(void);

/// A DNS and TLS-session cache shared by every get that passes it, so a source asked often is
/// not looked up and fully handshaken each time. Lives as long as the process.
void *curl_shim_share_create(void);

curl_shim_outcome curl_shim_get(const curl_shim_get_request *request, void *share, curl_shim_get_result *result);

void curl_shim_free_result(curl_shim_get_result *result);

/// One mail over SMTP (libcurl speaks the protocol: EHLO, STARTTLS, AUTH, MAIL FROM, RCPT TO,
/// DATA) with a text and an HTML part as multipart/alternative (libcurl's MIME builder).
typedef struct curl_shim_mail {
    /// smtp://host:port (STARTTLS when offered, or always with `require_tls`) or smtps://.
    const char *url;
    /// NULL: no AUTH.
    const char *username;
    const char *password;
    int require_tls;
    /// A PEM file of certificates to trust instead of the system's; NULL for the system's.
    const char *ca_file;
    long timeout_ms;
    /// The envelope sender and recipient: bare addresses, without angle brackets.
    const char *envelope_from;
    const char *envelope_to;
    /// "Name: value" header lines (From, To, Subject, Date, Message-ID, Auto-Submitted).
    const char *const *headers;
    size_t header_count;
    const char *text;
    const char *html;
} curl_shim_mail;

/// 0 when the server accepted the mail; otherwise libcurl's code, with its words in `error`
/// and the mail server's last reply code (550, 421, …; 0 when it never answered) in
/// `response_code`.
int curl_shim_send_mail(const curl_shim_mail *mail, long *response_code, char *error, size_t error_capacity);

#endif

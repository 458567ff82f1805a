#ifndef STRATA_CTLSCREDENTIALS_H
#define STRATA_CTLSCREDENTIALS_H
#include <stddef.h>

/// Parses a PEM certificate chain and private key with GnuTLS and makes them the ones every new
/// TLS handshake presents. On failure returns a negative GnuTLS code and writes why into
/// `error`; the credentials in force stay.
int strata_tls_load(const char *certificate, size_t certificate_length, const char *key, size_t key_length,
                    char *error, size_t error_length);

/// The `gnutls_certificate_retrieve_function2` to give libmicrohttpd as
/// `MHD_OPTION_HTTPS_CERT_CALLBACK`: it answers each handshake with the credentials last loaded.
void *strata_tls_certificate_callback(void);

/// Sends `request` over TLS on the connected socket `fd` and reads up to `capacity` bytes of the
/// answer into `response` (no certificate check: for the local health probe, which sends no
/// secret). Returns the bytes read, or -1.
long strata_tls_exchange(int fd, const char *request, size_t length, char *response, size_t capacity);
#endif

#include "CTLSCredentials.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct credentials {
    gnutls_pcert_st *certificates;
    unsigned int count;
    gnutls_privkey_t key;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// Loaded credentials are kept for the life of the process: a handshake that began with an earlier
// set may still use it, and GnuTLS does not free what the callback returns.
static struct credentials *current = NULL;

int strata_tls_load(const char *certificate, size_t certificate_length, const char *key, size_t key_length,
                    char *error, size_t error_length) {
    gnutls_datum_t chain = {(unsigned char *)certificate, (unsigned int)certificate_length};
    gnutls_datum_t secret = {(unsigned char *)key, (unsigned int)key_length};
    unsigned int count = 16;
    gnutls_pcert_st *certificates = calloc(count, sizeof *certificates);
    if (!certificates) return GNUTLS_E_MEMORY_ERROR;
    int status = gnutls_pcert_list_import_x509_raw(certificates, &count, &chain, GNUTLS_X509_FMT_PEM, 0);
    if (status < 0) {
        snprintf(error, error_length, "the certificate: %s", gnutls_strerror(status));
        free(certificates);
        return status;
    }
    gnutls_privkey_t privkey;
    status = gnutls_privkey_init(&privkey);
    if (status >= 0) status = gnutls_privkey_import_x509_raw(privkey, &secret, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (status < 0) {
        snprintf(error, error_length, "the private key: %s", gnutls_strerror(status));
        for (unsigned int i = 0; i < count; i++) gnutls_pcert_deinit(&certificates[i]);
        free(certificates);
        return status;
    }
    struct credentials *loaded = malloc(sizeof *loaded);
    if (!loaded) return GNUTLS_E_MEMORY_ERROR;
    loaded->certificates = certificates;
    loaded->count = count;
    loaded->key = privkey;
    pthread_mutex_lock(&lock);
    current = loaded;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                    unsigned int *pcert_length, gnutls_privkey_t *privkey) {
    (void)session;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    pthread_mutex_lock(&lock);
    struct credentials *in_force = current;
    pthread_mutex_unlock(&lock);
    if (!in_force) return -1;
    *pcert = in_force->certificates;
    *pcert_length = in_force->count;
    *privkey = in_force->key;
    return 0;
}

void *strata_tls_certificate_callback(void) { return (void *)retrieve; }

long strata_tls_exchange(int fd, const char *request, size_t length, char *response, size_t capacity) {
    gnutls_certificate_credentials_t anonymous;
    gnutls_session_t session;
    if (gnutls_certificate_allocate_credentials(&anonymous) < 0) return -1;
    if (gnutls_init(&session, GNUTLS_CLIENT) < 0) {
        gnutls_certificate_free_credentials(anonymous);
        return -1;
    }
    long total = -1;
    if (gnutls_set_default_priority(session) >= 0 &&
        gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, anonymous) >= 0) {
        gnutls_transport_set_int(session, fd);
        gnutls_handshake_set_timeout(session, 3000);
        int status;
        do {
            status = gnutls_handshake(session);
        } while (status < 0 && !gnutls_error_is_fatal(status));
        if (status >= 0 && gnutls_record_send(session, request, length) == (ssize_t)length) {
            total = 0;
            while ((size_t)total < capacity) {
                ssize_t received = gnutls_record_recv(session, response + total, capacity - (size_t)total);
                if (received == GNUTLS_E_AGAIN || received == GNUTLS_E_INTERRUPTED) continue;
                if (received <= 0) break;
                total += received;
            }
            gnutls_bye(session, GNUTLS_SHUT_WR);
        }
    }
    gnutls_deinit(session);
    gnutls_certificate_free_credentials(anonymous);
    return total;
}

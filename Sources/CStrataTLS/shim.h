#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>

/* What OpenSSL spells as macros, as functions Swift can call. */

/* TLS 1.2 at least, no renegotiation, buffers released while a connection is idle. */
static inline int strata_tls_configure(SSL_CTX *context) {
    if (SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) != 1) return 0;
    SSL_CTX_set_mode(context, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    return 1;
}

// OpenSSL's libcrypto, for ChaCha20-Poly1305 that writes straight into the caller's buffer
// with a context kept per key (swift-crypto's API allocates its output and a context per call).
#include <openssl/evp.h>

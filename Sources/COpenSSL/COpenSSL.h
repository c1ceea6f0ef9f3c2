// DES_* (des.h) is deprecated in OpenSSL 3 but still in libcrypto: the virtual cards' single-DES
// primitives for the retail MAC (the default provider offers no single DES through EVP).
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/des.h>
#include <openssl/bn.h>

#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic, which Swift cannot call: this fixed-argument wrapper passes the
   options tapemu's HTTPServer uses. thread_pool_size > 1 asks for that many polling threads
   (MHD_OPTION_THREAD_POOL_SIZE, with an internal polling thread mode); 0 or 1: one. */
static inline struct MHD_Daemon *tapemu_mhd_start(unsigned int flags, int listen_fd,
                                                  MHD_AccessHandlerCallback handler, void *handler_cls,
                                                  MHD_RequestCompletedCallback completed, void *completed_cls,
                                                  unsigned int connection_timeout_seconds,
                                                  size_t connection_memory_limit,
                                                  unsigned int connection_limit,
                                                  unsigned int thread_pool_size,
                                                  MHD_NotifyConnectionCallback notify_connection,
                                                  void *notify_connection_cls,
                                                  void *(*uri_log)(void *cls, const char *uri,
                                                                   struct MHD_Connection *connection),
                                                  void *uri_log_cls) {
    struct MHD_OptionItem pool[] = {
        { thread_pool_size > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, thread_pool_size, NULL },
        { MHD_OPTION_END, 0, NULL } };
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, notify_connection_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
                            MHD_OPTION_ARRAY, pool,
                            MHD_OPTION_END);
}

/* MHD_get_connection_info is variadic too: the connection's socket, -1 when unknown. */
static inline int tapemu_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/* The client's address; NULL when unknown. */
static inline const struct sockaddr *tapemu_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/* The same daemon over TLS (GnuTLS inside libmicrohttpd): the certificate chain and private key
   as NUL-terminated PEM text, copied by the daemon at start. */
static inline struct MHD_Daemon *tapemu_mhd_start_tls(unsigned int flags, int listen_fd,
                                                      MHD_AccessHandlerCallback handler, void *handler_cls,
                                                      MHD_RequestCompletedCallback completed, void *completed_cls,
                                                      unsigned int connection_timeout_seconds,
                                                      size_t connection_memory_limit,
                                                      unsigned int connection_limit,
                                                  unsigned int thread_pool_size,
                                                      MHD_NotifyConnectionCallback notify_connection,
                                                      void *notify_connection_cls,
                                                      void *(*uri_log)(void *cls, const char *uri,
                                                                       struct MHD_Connection *connection),
                                                      void *uri_log_cls,
                                                      const char *cert_pem, const char *key_pem) {
    struct MHD_OptionItem pool[] = {
        { thread_pool_size > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, thread_pool_size, NULL },
        { MHD_OPTION_END, 0, NULL } };
    return MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, notify_connection_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
                            MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
                            MHD_OPTION_HTTPS_MEM_KEY, key_pem,
                            MHD_OPTION_ARRAY, pool,
                            MHD_OPTION_END);
}

/* Whether this libmicrohttpd was built with TLS. */
static inline int tapemu_mhd_supports_tls(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

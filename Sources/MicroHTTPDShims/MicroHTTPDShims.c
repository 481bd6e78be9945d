#include "MicroHTTPDShims.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

static int resolve_host(const char *host, uint16_t port, struct sockaddr_storage *out,
                        char *error, size_t error_capacity) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned) port);
    struct addrinfo *result = NULL;
    int status = getaddrinfo(host, service, &hints, &result);
    if (status != 0 || result == NULL) {
        if (error) snprintf(error, error_capacity, "cannot resolve host '%s': %s", host, gai_strerror(status));
        return -1;
    }
    memcpy(out, result->ai_addr, result->ai_addrlen);
    freeaddrinfo(result);
    return 0;
}

struct MHD_Daemon *mhd_shim_start_daemon(const mhd_shim_daemon_config *config,
                                         char *error, size_t error_capacity) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_storage address;
    memset(&address, 0, sizeof address);
    int has_address = 0;
    if (config->host != NULL && config->host[0] != '\0') {
        if (resolve_host(config->host, config->port, &address, error, error_capacity) != 0) return NULL;
        has_address = 1;
        if (address.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    }

    struct MHD_OptionItem options[8];
    int n = 0;
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, config->thread_pool_size, NULL };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, config->connection_limit, NULL };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, config->connection_timeout, NULL };
    if (config->connection_memory_limit > 0)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                                (intptr_t) config->connection_memory_limit, NULL };
    if (config->completed_handler != NULL)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED,
                                                (intptr_t) config->completed_handler,
                                                config->completed_handler_cls };
    if (has_address)
        options[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &address };
    options[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };

    struct MHD_Daemon *daemon = MHD_start_daemon(flags, config->port, NULL, NULL,
                                                 config->access_handler, config->access_handler_cls,
                                                 MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL && error)
        snprintf(error, error_capacity, "libmicrohttpd could not start on port %u (address in use or not permitted?)",
                 (unsigned) config->port);
    return daemon;
}

uint16_t mhd_shim_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

unsigned long mhd_shim_raise_open_file_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return (unsigned long) limit.rlim_cur;
}

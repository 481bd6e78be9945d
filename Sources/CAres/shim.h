#include <ares.h>
#include <ares_dns.h>
#include <arpa/nameser.h>

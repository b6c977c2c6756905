#pragma once
// Internal to the probe runner: the part tcp and http probes share. The host is
// resolved without blocking (a numeric address directly, a name through
// uv_getaddrinfo on libuv's thread pool), then each address is tried in turn with a
// non-blocking uv_tcp_connect until one accepts. What happens on a connection is the
// subclass's business.

#include <sys/socket.h>
#include <uv.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/shell/probes/probe_attempt.hpp"

namespace pkit::shell {

// Where to connect: `host` without brackets, `port` as digits.
struct NetTarget {
    std::string host;
    std::string port;
};

// "host:port" or "[v6addr]:port"; nullopt when malformed (the loader checked it).
std::optional<NetTarget> parse_tcp_target(std::string_view target);

struct HttpTarget {
    NetTarget net;
    std::string host_header;  // the URL's authority as written: "host[:port]"
    std::string path;         // "/" when the URL has none
};

// "http://host[:port][/path]"; nullopt for anything else, https included.
std::optional<HttpTarget> parse_http_target(std::string_view url);

class NetAttempt : public ProbeAttempt {
public:
    NetAttempt(ProbeRunner& runner, const ProbeRequest& request, NetTarget target);
    // Detaches the requests still pending; closing the socket cancels a connect.
    ~NetAttempt() override;

protected:
    // A connection is established on stream(); called once per attempt.
    virtual void on_connected() = 0;

    uv_stream_t* stream() const { return m_tcp ? m_tcp->as_stream() : nullptr; }
    // "127.0.0.1:8080", the address connected to (or being tried).
    std::string address_text() const;

private:
    void begin() override;
    void connect_next();

    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result);
    static void on_connect(uv_connect_t* req, int status);

    NetTarget m_target;
    std::vector<sockaddr_storage> m_addresses;
    std::size_t m_next = 0;
    std::string m_last_error;
    std::unique_ptr<UvHandle<uv_tcp_t>> m_tcp;
    uv_getaddrinfo_t* m_resolving = nullptr;  // owned by its callback
    uv_connect_t* m_connecting = nullptr;     // owned by its callback
};

}  // namespace pkit::shell

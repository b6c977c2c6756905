// HTTP probes (SPEC §3): one GET over a fresh connection, `Connection: close`, and only
// the status line is read; 2xx and 3xx are healthy, a redirect is never followed. The
// rest of the response is ignored, so a large or slow body costs nothing.

#include <array>
#include <charconv>
#include <cstring>

#include "daemon/shell/probes/probe_net.hpp"

namespace pkit::shell {

namespace {

// A status line longer than this is not HTTP worth waiting for.
constexpr std::size_t k_max_status_line = 1024;

// The request text lives with its write request, which may outlive the attempt.
struct WriteRequest {
    uv_write_t req{};
    std::string text;
};

// "HTTP/1.1 503 Service Unavailable" -> 503; nullopt when it is no status line.
std::optional<int> parse_status_line(std::string_view line) {
    if (!line.starts_with("HTTP/")) {
        return std::nullopt;
    }
    auto space = line.find(' ');
    if (space == std::string_view::npos || line.size() < space + 4) {
        return std::nullopt;
    }
    int code = 0;
    const char* digits = line.data() + space + 1;
    auto [end, error] = std::from_chars(digits, digits + 3, code);
    if (error != std::errc{} || end != digits + 3 || code < 100 || code > 999) {
        return std::nullopt;
    }
    return code;
}

class HttpAttempt final : public NetAttempt {
public:
    HttpAttempt(ProbeRunner& runner, const ProbeRequest& request, HttpTarget target)
        : NetAttempt(runner, request, target.net), m_target(std::move(target)) {}

    ~HttpAttempt() override {
        if (m_writing != nullptr) {
            m_writing->req.data = nullptr;  // the socket's close cancels it
        }
    }

private:
    void on_connected() override {
        auto* write = new WriteRequest;
        write->req.data = this;
        write->text = "GET " + m_target.path + " HTTP/1.1\r\nHost: " + m_target.host_header +
                      "\r\nConnection: close\r\nUser-Agent: pkit\r\n\r\n";
        uv_buf_t buf = uv_buf_init(write->text.data(), static_cast<unsigned>(write->text.size()));
        int rc = uv_write(&write->req, stream(), &buf, 1, &HttpAttempt::on_write);
        if (rc != 0) {
            delete write;
            complete(false, std::string("cannot send the request: ") + uv_strerror(rc));
            return;
        }
        m_writing = write;
        rc = uv_read_start(stream(), &HttpAttempt::on_alloc, &HttpAttempt::on_read);
        if (rc != 0) {
            complete(false, std::string("cannot read the response: ") + uv_strerror(rc));
        }
    }

    // A failed write is not reported by itself: the read that follows ends with the
    // server's reset or EOF, or with the status line it sent before closing.
    static void on_write(uv_write_t* req, int) {
        std::unique_ptr<WriteRequest> owned(reinterpret_cast<WriteRequest*>(req));
        if (auto* self = static_cast<HttpAttempt*>(req->data)) {
            self->m_writing = nullptr;
        }
    }

    // The socket's data is the NetAttempt that owns it (see NetAttempt::connect_next).
    static HttpAttempt* from_handle(void* data) {
        return static_cast<HttpAttempt*>(static_cast<NetAttempt*>(data));
    }

    static void on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
        auto* self = from_handle(handle->data);
        if (self == nullptr || self->m_used >= self->m_buffer.size()) {
            *buf = uv_buf_init(nullptr, 0);
            return;
        }
        *buf = uv_buf_init(self->m_buffer.data() + self->m_used,
                           static_cast<unsigned>(self->m_buffer.size() - self->m_used));
    }

    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t*) {
        auto* self = from_handle(stream->data);
        if (self == nullptr || nread == 0) {
            return;
        }
        guarded([&] { self->on_bytes(nread); });
    }

    void on_bytes(ssize_t nread) {
        if (nread < 0) {
            complete(false, nread == UV_EOF ? std::string("connection closed before a status line")
                                            : std::string(uv_strerror(static_cast<int>(nread))));
            return;
        }
        m_used += static_cast<std::size_t>(nread);
        std::string_view received(m_buffer.data(), m_used);
        auto end = received.find('\n');
        if (end == std::string_view::npos) {
            if (m_used >= m_buffer.size()) {
                complete(false, "no HTTP status line in the first " +
                                    std::to_string(k_max_status_line) + " bytes");
            }
            return;
        }
        std::string_view line = received.substr(0, end);
        if (line.ends_with('\r')) {
            line.remove_suffix(1);
        }
        auto code = parse_status_line(line);
        if (!code) {
            complete(false, "not an HTTP response");
            return;
        }
        complete(*code >= 200 && *code < 400, "HTTP " + std::to_string(*code));
    }

    HttpTarget m_target;
    WriteRequest* m_writing = nullptr;  // owned by its callback
    std::array<char, k_max_status_line> m_buffer{};
    std::size_t m_used = 0;
};

}  // namespace

std::unique_ptr<ProbeAttempt> make_http_attempt(ProbeRunner& runner, const ProbeRequest& request) {
    auto target = parse_http_target(request.probe->target);
    if (!target) {
        return make_failed_attempt(runner, request,
                                   "bad http target \"" + request.probe->target + "\"");
    }
    return std::make_unique<HttpAttempt>(runner, request, std::move(*target));
}

}  // namespace pkit::shell

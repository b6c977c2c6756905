#pragma once
// Helpers for the control server's tests: a scripted handler and a raw client socket
// driven from the test's own loop, so every exchange is deterministic.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/shell/control/control_server.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

// Answers ping at once with {"pong": true}; holds status requests until the test
// releases them; answers events with {} and turns the connection into a stream.
class FakeHandler : public ControlHandler {
public:
    void on_request(ConnectionId connection, proto::Request request) override;
    void on_disconnect(ConnectionId connection) override;

    // Replies to the oldest held status request with {"held": true}.
    void release_one();

    ControlServer* server = nullptr;
    // When set, a ping's result also carries "pad": a string of this many bytes.
    std::size_t ping_reply_bytes = 0;
    std::vector<ConnectionId> held;
    std::vector<ConnectionId> streams;
    std::vector<ConnectionId> disconnected;
    int requests = 0;
};

// Opens a server at `path` with `handler`, failing the test when it cannot.
std::unique_ptr<ControlServer> open_server(TestLoop& loop, const std::string& path,
                                           FakeHandler& handler, SocketOptions options = {});

// A client end of the socket, non-blocking so it can be driven from the loop's thread.
class RawClient {
public:
    RawClient(TestLoop& loop, const std::string& path);
    ~RawClient();
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    bool connected() const { return m_fd >= 0; }
    // Writes all of `bytes`, running the loop whenever the socket is full. Returns
    // false if the server closed the connection first.
    bool write(const std::string& bytes);
    // shutdown(SHUT_WR): the half-close of `printf ... | socat`.
    void shutdown_write();
    // The next line (without newline), or nullopt on EOF or after `limit`.
    std::optional<std::string> read_line(std::chrono::milliseconds limit = 5s);
    // True once the server has closed the connection (EOF or reset).
    bool wait_closed(std::chrono::milliseconds limit = 5s);
    // Whether a line arrives within `limit`; used to check that nothing does.
    bool line_within(std::chrono::milliseconds limit);

private:
    // Reads what is available without blocking; sets m_eof at EOF or error.
    void drain();

    TestLoop& m_loop;
    int m_fd = -1;
    std::string m_input;
    bool m_eof = false;
};

// The reply of a ping line with `id`, parsed.
proto::json parse_line(const std::string& line);

}  // namespace pkit::shell::test

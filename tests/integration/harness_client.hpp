#pragma once
// A raw client of pkitd's control socket (SPEC §9): one JSON object a line.

#include <chrono>
#include <deque>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pkit::itest {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Duration = std::chrono::milliseconds;

// One Unix stream connection. Blocking I/O bounded by deadlines (poll); no thread.
class Client {
public:
    // Connects or throws std::runtime_error (with the reason).
    explicit Client(const std::string& socket_path);
    ~Client();
    Client(Client&& other) noexcept;
    Client& operator=(Client&&) = delete;
    Client(const Client&) = delete;

    // Connects, or nullopt when nothing answers at the path.
    static std::optional<Client> try_connect(const std::string& socket_path);

    // Sends one request (an `id` is added when missing) and returns its reply line.
    // Stream lines (`event`, `line`) read meanwhile are kept for read_json(). Fails the
    // test case when no reply comes within `timeout`.
    json request(json req, Duration timeout = std::chrono::seconds(10));
    // request({"cmd": cmd}); shorthand.
    json command(const std::string& cmd, Duration timeout = std::chrono::seconds(10));

    // Writes bytes as they are (no newline added); fails the case when it cannot.
    void send_raw(const std::string& bytes);
    // The same, returning false when pkitd closed the connection meanwhile (which it
    // may do in the middle of an oversized line).
    bool try_send_raw(const std::string& bytes);
    // The next line without its newline, or nullopt at the deadline or at EOF.
    std::optional<std::string> read_line(Clock::time_point deadline);
    // The next line parsed as JSON (queued stream lines first).
    std::optional<json> read_json(Clock::time_point deadline);
    // Half-closes the writing side (shutdown(SHUT_WR)).
    void shutdown_write();
    // True once the peer closed the connection (seen by a read).
    bool eof() const { return m_eof; }

private:
    int m_fd = -1;
    std::string m_buffer;
    std::deque<json> m_queued;
    bool m_eof = false;
    long m_next_id = 1;
    std::string m_send_error;
};

// The status object of one service (result.services[0] of `status`); fails the case
// when the request fails.
json status(Client& client, const std::string& name);
// The `daemon` object of `status`.
json daemon_status(Client& client);
// The `lines` texts of a `logs` reply's result.
std::vector<std::string> texts(const json& logs_result);

// A subscription to the `events` stream on its own connection.
class EventStream {
public:
    explicit EventStream(const std::string& socket_path);
    // The next event object (the inner `event`), or nullopt at the deadline.
    std::optional<json> next(Clock::time_point deadline);
    // Reads events into `seen` until `done(event)` is true; fails the case with `what`
    // and the events seen when that does not happen within `timeout`.
    template <class Pred>
    json until(Pred done, Duration timeout, const std::string& what);
    // Every event read until `deadline`.
    std::vector<json> collect_until(Clock::time_point deadline);
    // All events read so far.
    const std::vector<json>& seen() const { return m_seen; }
    // Events of `type` (and of `service`, when not empty) among those seen.
    std::vector<json> of_type(const std::string& type, const std::string& service = "") const;

private:
    [[noreturn]] void fail_timeout(const std::string& what) const;
    Client m_client;
    std::vector<json> m_seen;
};

template <class Pred>
json EventStream::until(Pred done, Duration timeout, const std::string& what) {
    const auto deadline = Clock::now() + timeout;
    while (auto event = next(deadline)) {
        if (done(*event)) {
            return *event;
        }
    }
    fail_timeout(what);
}

}  // namespace pkit::itest

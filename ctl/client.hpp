#pragma once
// pkitctl's blocking client: connect, send one request line, read reply lines.
// Dumb on purpose (DESIGN: no event loop, no policy): every wait has a deadline
// except the reading of a stream the user asked to follow.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "ctl/global_options.hpp"
#include "proto/protocol.hpp"

namespace pkit::ctl {

class Client {
public:
    // Connects to the socket at `path`, waiting at most `timeout`. Throws CtlError(4)
    // "cannot connect to PATH (ORIGIN): REASON; name the socket with --socket ...", where
    // ORIGIN says where the path came from ("--socket", "$PKIT_SOCKET", "the default")
    // when given.
    Client(std::string path, std::chrono::milliseconds timeout, std::string origin = {});
    // The same with the socket the global options name (ctl/common.hpp, socket_path).
    Client(const GlobalOptions& global, std::chrono::milliseconds timeout);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // Sends the request's line. Throws CtlError(4) if pkitd has gone.
    void send(const proto::Request& request);

    // The next line from pkitd, parsed. Waits until `deadline` when given (then throws
    // CtlError(4) "no reply from PATH within Ns"), forever otherwise. Returns nullopt
    // when pkitd closed the connection, or when interrupted() became true.
    std::optional<proto::Reply> read(std::optional<std::chrono::steady_clock::time_point> deadline);

    // Whether a line (or the connection's end, an error or an interruption) is there
    // to read before `deadline`: false once the deadline passed first.
    bool readable_before(std::chrono::steady_clock::time_point deadline);
    // From now on read_reply() waits until `deadline` instead of its timeout from the
    // call, and its error names `shown` as the time it waited.
    void set_reply_deadline(std::chrono::steady_clock::time_point deadline,
                            std::chrono::milliseconds shown);

    // The first reply to a request just sent, within the connect timeout (or until the
    // deadline set_reply_deadline() gave). Throws CtlError(4) on no reply or a closed
    // connection.
    proto::Reply read_reply();
    // The same reply's line, unparsed (for a reader of its own, proto/status_rows.hpp).
    std::string read_reply_line();
    // A line read so, parsed as read_reply() parses it (the same CtlError when it is
    // none of the protocol's lines).
    proto::Reply reply_of(std::string_view line) const;

    const std::string& path() const { return m_path; }
    // For waiting on several clients at once (logs -f of several services): the
    // socket to poll, and whether a whole line is already buffered (read() returns it
    // without waiting).
    int fd() const { return m_fd; }
    bool has_line() const { return m_buffer.find('\n') != std::string::npos; }

private:
    // One line from the socket; nullopt on EOF or interruption.
    std::optional<std::string> read_line(
        std::optional<std::chrono::steady_clock::time_point> deadline);

    std::string m_path;
    std::chrono::milliseconds m_timeout;
    std::optional<std::chrono::steady_clock::time_point> m_reply_deadline;
    int m_fd = -1;
    std::string m_buffer;
};

// SIGINT and SIGTERM end a followed stream cleanly (exit 0) instead of killing pkitctl.
void catch_interrupts();
bool interrupted();

// "10s", "2.5s": a timeout as the messages show it.
std::string seconds_text(std::chrono::milliseconds timeout);

}  // namespace pkit::ctl

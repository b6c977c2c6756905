#pragma once
// The sd_notify protocol for one run (SPEC §3): a datagram socket whose path the run
// gets as NOTIFY_SOCKET. Messages are newline-separated KEY=VALUE fields; READY=1,
// STATUS=, WATCHDOG=1 and EXTEND_TIMEOUT_USEC= are passed on, everything else is
// ignored.
//
// Who may speak: the kernel stamps each datagram with the sender's real pid
// (SO_PASSCRED). A message is accepted when that process is in the run's process
// group, or has already exited (`systemd-notify --no-block` sends and exits at once;
// only the run knows the path, and the socket file is writable by the run's user
// only). A message from a live process outside the group is dropped and counted.
// Residual risk: a sender that exited and whose pid was reused by an unrelated process
// before the message is read is judged by the new process and dropped.

#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/model.hpp"
#include "daemon/core/types.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

// The fields of one datagram that pkit acts on (the core's type: the Supervisor takes
// it as is). A field given twice counts once, with its last value.
using NotifyMessage = core::NotifyMessage;

// Parses one datagram's text. Unknown fields, lines without '=', READY/WATCHDOG with a
// value other than 1 and an EXTEND_TIMEOUT_USEC that is not a number are ignored.
NotifyMessage parse_notify_message(std::string_view text);

class NotifySocket {
public:
    // Called once per accepted message that is not empty(). May destroy the socket.
    // An exception it throws is swallowed.
    using Callback = std::function<void(const NotifyMessage&)>;

    // Binds a datagram socket at `path` and watches it in the loop. The parent
    // directory is created (0755) if missing; an old file at `path` is replaced. The
    // socket file is mode 0600, owned by `owner` when given (the uid the run will
    // drop to, see notify_owner), else by pkitd's user: sending needs write access, and
    // nobody else needs it. Fails with a message naming the path and the reason.
    static std::expected<std::unique_ptr<NotifySocket>, std::string> open(
        uv_loop_t* loop, std::string path, Callback callback,
        std::optional<uid_t> owner = std::nullopt);

    // Closes the socket and removes its file.
    // The socket bound at `path` that a previous pkitd handed over in `fd` (SPEC §16).
    static std::expected<std::unique_ptr<NotifySocket>, std::string> adopt(uv_loop_t* loop,
                                                                           std::string path,
                                                                           Callback callback,
                                                                           int fd);
    ~NotifySocket();
    int fd() const { return m_fd; }

    NotifySocket(const NotifySocket&) = delete;
    NotifySocket& operator=(const NotifySocket&) = delete;

    // The run's process group (its main pid: runs are session leaders), known after
    // fork. Call it before the loop runs again: until then no live sender is accepted.
    void set_run_pgid(pid_t pgid) { m_pgid = pgid; }

    const std::string& path() const { return m_path; }

    // Messages dropped: from a live process outside the run's group, without
    // credentials, or longer than the receive buffer.
    std::uint64_t ignored() const { return m_ignored; }

private:
    NotifySocket(std::string path, Callback callback, int fd);

    static void on_readable(uv_poll_t* handle, int status, int events);
    // Reads one datagram; false when there is none left (or the socket failed).
    bool receive_one(bool& destroyed);
    bool sender_allowed(pid_t pid) const;

    std::string m_path;
    Callback m_callback;
    int m_fd;
    pid_t m_pgid = 0;
    std::uint64_t m_ignored = 0;
    // Points at a flag on on_readable's stack while it runs, so that a callback that
    // destroys this socket stops the receive loop.
    bool* m_destroyed = nullptr;
    UvHandle<uv_poll_t> m_poll;
};

// The uid a run of `spec` will have when it sets `user`, for NotifySocket::open's
// `owner`; nullopt when it keeps pkitd's user or the name is unknown (the launch then
// fails anyway): config::user_id, the one lookup of a configured user.
std::optional<uid_t> notify_owner(const config::ServiceSpec& spec);

}  // namespace pkit::shell

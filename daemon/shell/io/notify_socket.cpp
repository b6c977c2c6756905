#include "daemon/shell/io/notify_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "config/accounts.hpp"

namespace pkit::shell {

namespace {

// systemd accepts datagrams up to PIPE_BUF (4 KiB); a little more is read so that
// such a message is never cut, and anything longer is dropped whole.
constexpr std::size_t k_max_message = 4096 + 512;

// SCM_MAX_FD: the most descriptors one message can carry.
constexpr std::size_t k_max_fds = 253;

// Datagrams read per wake-up, so that a flooding run cannot starve the loop.
constexpr int k_batch = 64;

std::string failure(const std::string& path, const char* what, int error) {
    return "notify socket " + path + ": " + what + ": " + std::strerror(error);
}

// Closes every descriptor that came with the message and returns its credentials, if
// any. Descriptors are never kept: closing them is what `BARRIER=1` waits for.
std::optional<ucred> take_control(msghdr& header) {
    std::optional<ucred> credentials;
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr;
         cmsg = CMSG_NXTHDR(&header, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET) {
            continue;
        }
        if (cmsg->cmsg_type == SCM_RIGHTS) {
            std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int fd = -1;
                std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof fd);
                if (fd >= 0) {
                    close(fd);
                }
            }
        } else if (cmsg->cmsg_type == SCM_CREDENTIALS &&
                   cmsg->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
            ucred value{};
            std::memcpy(&value, CMSG_DATA(cmsg), sizeof value);
            credentials = value;
        }
    }
    return credentials;
}

// Creates the missing directories above `path` with exactly mode 0755, whatever
// pkitd's umask: never writable by others (nobody can swap the socket), always
// searchable (a run that dropped to another user must reach it).
std::expected<void, std::string> make_parents(const std::string& path) {
    for (auto slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
        std::string directory = path.substr(0, slash);
        if (mkdir(directory.c_str(), 0755) == 0) {
            chmod(directory.c_str(), 0755);
        } else if (errno != EEXIST) {
            return std::unexpected("cannot create " + directory + ": " + std::strerror(errno));
        }
    }
    return {};
}

}  // namespace

std::expected<std::unique_ptr<NotifySocket>, std::string> NotifySocket::open(
    uv_loop_t* loop, std::string path, Callback callback, std::optional<uid_t> owner) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        return std::unexpected("notify socket " + path + ": path empty or too long");
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

    if (auto made = make_parents(path); !made) {
        return std::unexpected("notify socket " + path + ": " + made.error());
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        return std::unexpected(failure(path, "cannot replace the old file", errno));
    }

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return std::unexpected(failure(path, "socket", errno));
    }
    int on = 1;
    // fchmod before bind sets the mode of the file bind creates: no window in which a
    // stranger could send to a 0777-minus-umask socket.
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 || fchmod(fd, 0600) != 0) {
        int error = errno;
        close(fd);
        return std::unexpected(failure(path, "socket options", error));
    }
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        int error = errno;
        close(fd);
        return std::unexpected(failure(path, "bind", error));
    }
    if ((chmod(path.c_str(), 0600) != 0) ||
        (owner && *owner != geteuid() &&
         chown(path.c_str(), *owner, static_cast<gid_t>(-1)) != 0)) {
        int error = errno;
        close(fd);
        unlink(path.c_str());
        return std::unexpected(failure(path, "permissions", error));
    }

    return adopt(loop, std::move(path), std::move(callback), fd);
}

std::expected<std::unique_ptr<NotifySocket>, std::string> NotifySocket::adopt(uv_loop_t* loop,
                                                                              std::string path,
                                                                              Callback callback,
                                                                              int fd) {
    std::unique_ptr<NotifySocket> socket(
        new NotifySocket(std::move(path), std::move(callback), fd));
    int rc = socket->m_poll.init(uv_poll_init, loop, fd);
    if (rc == 0) {
        rc = uv_poll_start(socket->m_poll.get(), UV_READABLE, &NotifySocket::on_readable);
    }
    if (rc != 0) {
        return std::unexpected("notify socket " + socket->m_path + ": watch: " + uv_strerror(rc));
    }
    return socket;
}

NotifySocket::NotifySocket(std::string path, Callback callback, int fd)
    : m_path(std::move(path)), m_callback(std::move(callback)), m_fd(fd), m_poll(this) {}

NotifySocket::~NotifySocket() {
    if (m_destroyed != nullptr) {
        *m_destroyed = true;
    }
    // uv_close stops polling at once, so the descriptor can be closed right after.
    m_poll.reset();
    close(m_fd);
    unlink(m_path.c_str());
}

void NotifySocket::on_readable(uv_poll_t* handle, int status, int) {
    auto* self = static_cast<NotifySocket*>(handle->data);
    if (self == nullptr || status < 0) {
        return;
    }
    bool destroyed = false;
    self->m_destroyed = &destroyed;
    for (int i = 0; i < k_batch; ++i) {
        bool more = false;
        try {
            more = self->receive_one(destroyed);
        } catch (...) {
            more = !destroyed;
        }
        if (destroyed) {
            return;
        }
        if (!more) {
            break;
        }
    }
    self->m_destroyed = nullptr;
}

bool NotifySocket::receive_one(bool& destroyed) {
    char text[k_max_message];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(k_max_fds * sizeof(int))];
    iovec iov{text, sizeof text};
    msghdr header{};
    header.msg_iov = &iov;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    ssize_t n = recvmsg(m_fd, &header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
        return errno == EINTR;
    }
    // Descriptors first, whatever becomes of the message. With MSG_CTRUNC the kernel
    // has already closed the ones that did not fit.
    std::optional<ucred> credentials = take_control(header);
    if ((header.msg_flags & MSG_TRUNC) != 0 || !credentials || !sender_allowed(credentials->pid)) {
        ++m_ignored;
        return true;
    }
    NotifyMessage message =
        parse_notify_message(std::string_view(text, static_cast<std::size_t>(n)));
    if (!message.empty() && m_callback) {
        Callback callback = m_callback;  // the callback may destroy this socket
        callback(message);
    }
    return !destroyed;
}

bool NotifySocket::sender_allowed(pid_t pid) const {
    // pid 0: the sender lives in a pid namespace we cannot see into; it cannot be
    // identified, so it is not trusted.
    if (pid <= 0) {
        return false;
    }
    pid_t group = getpgid(pid);
    if (group < 0) {
        return errno == ESRCH;  // already exited: only the run knew the path
    }
    return m_pgid > 0 && group == m_pgid;
}

std::optional<uid_t> notify_owner(const config::ServiceSpec& spec) {
    return config::user_id(spec.process->user);
}

}  // namespace pkit::shell

#include "daemon/shell/listen/listen_sockets.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/accounts.hpp"

namespace pkit::shell {

namespace {

std::string key_of(const config::ListenSpec& spec) {
    return std::string(config::to_string(spec.kind)) + " " + spec.address;
}

// The name a run sees for the entry: its own, else the service's file name (an
// instance "web@2" is "web": its instances share the socket).
std::string name_of(const config::ListenSpec& spec, const std::string& service) {
    return spec.name.empty() ? service.substr(0, service.find('@')) : spec.name;
}

std::string why_bind_failed(const config::ListenSpec& spec, int error) {
    switch (error) {
        case EADDRINUSE:
            return "the address is in use";
        case EACCES:
        case EPERM:
            if (spec.kind != config::ListenKind::unix_ && spec.port < 1024) {
                return "port " + std::to_string(spec.port) +
                       " is privileged: pkitd needs root or CAP_NET_BIND_SERVICE to bind it";
            }
            return "permission denied";
        case EADDRNOTAVAIL:
            return "no interface of this host has that address";
        case ENOENT:
            return "its directory " + std::filesystem::path(spec.address).parent_path().string() +
                   " does not exist";
        default:
            return std::strerror(error);
    }
}

// The identity of the file a Unix socket was bound to (0 for others).
ino_t file_of(const config::ListenSpec& spec) {
    struct stat st {};
    if (spec.kind != config::ListenKind::unix_ || lstat(spec.address.c_str(), &st) != 0) {
        return 0;
    }
    return st.st_ino;
}

// Closes the socket; a Unix socket's file goes too, if it is still the one bound
// (`file`, from file_of()): another may have replaced it since.
void close_socket(int fd, const config::ListenSpec& spec, ino_t file) {
    if (file != 0 && file_of(spec) == file) {
        unlink(spec.address.c_str());
    }
    close(fd);
}

// A Unix socket file at `path` that nothing accepts on is a leftover (of a pkitd that
// was killed) and is replaced; one that answers, or a file that is not a socket, is
// an error.
std::expected<void, std::string> clear_unix_path(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) {
        return {};
    }
    if (!S_ISSOCK(st.st_mode)) {
        return std::unexpected(path + " exists and is not a socket");
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (probe < 0) {
        return std::unexpected(std::string(std::strerror(errno)));
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int rc = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    int error = errno;
    close(probe);
    if (rc == 0 || error == EAGAIN || error == EINPROGRESS) {
        return std::unexpected("the address is in use (something accepts on " + path + ")");
    }
    unlink(path.c_str());
    return {};
}

std::expected<void, std::string> apply_unix_attributes(const config::ListenSpec& spec) {
    if (chmod(spec.address.c_str(), static_cast<mode_t>(spec.mode)) != 0) {
        return std::unexpected(std::string("cannot set its mode: ") + std::strerror(errno));
    }
    if (!spec.owner.set() && !spec.group.set()) {
        return {};
    }
    uid_t uid = static_cast<uid_t>(-1);
    gid_t gid = static_cast<gid_t>(-1);
    if (spec.owner.set()) {
        auto id = config::user_id(spec.owner);
        if (!id) {
            return std::unexpected("owner: unknown user " + spec.owner.name.value_or(""));
        }
        uid = *id;
    }
    if (spec.group.set()) {
        auto id = config::group_id(spec.group);
        if (!id) {
            return std::unexpected("group: unknown group " + spec.group.name.value_or(""));
        }
        gid = *id;
    }
    if (lchown(spec.address.c_str(), uid, gid) != 0) {
        return std::unexpected(std::string("cannot set its owner or group: ") +
                               std::strerror(errno));
    }
    return {};
}

// A new socket for `spec`, bound (and listening, unless UDP), close-on-exec.
std::expected<int, std::string> bind_socket(const config::ListenSpec& spec) {
    sockaddr_storage storage{};
    socklen_t length = 0;
    int family = AF_INET;
    if (spec.kind == config::ListenKind::unix_) {
        family = AF_UNIX;
        auto& addr = reinterpret_cast<sockaddr_un&>(storage);
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, spec.address.c_str(), spec.address.size() + 1);
        length = sizeof addr;
        if (auto cleared = clear_unix_path(spec.address); !cleared) {
            return std::unexpected(cleared.error());
        }
    } else if (spec.host.find(':') != std::string::npos) {
        family = AF_INET6;
        auto& addr = reinterpret_cast<sockaddr_in6&>(storage);
        addr.sin6_family = AF_INET6;
        addr.sin6_port = htons(spec.port);
        inet_pton(AF_INET6, spec.host.c_str(), &addr.sin6_addr);
        length = sizeof addr;
    } else {
        auto& addr = reinterpret_cast<sockaddr_in&>(storage);
        addr.sin_family = AF_INET;
        addr.sin_port = htons(spec.port);
        inet_pton(AF_INET, spec.host.c_str(), &addr.sin_addr);
        length = sizeof addr;
    }
    // Blocking, as a run expects a socket it was handed (systemd's default too): the
    // flag belongs to the open file, which every run shares, and pkitd never accepts.
    int type = spec.kind == config::ListenKind::udp ? SOCK_DGRAM : SOCK_STREAM;
    int fd = socket(family, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return std::unexpected(std::string(std::strerror(errno)));
    }
    if (family != AF_UNIX) {
        // A pkitd restarted while connections of the last one linger in TIME_WAIT.
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
        int error = errno;
        close(fd);
        return std::unexpected(why_bind_failed(spec, error));
    }
    if (type == SOCK_STREAM && listen(fd, spec.backlog) != 0) {
        int error = errno;
        close_socket(fd, spec, file_of(spec));
        return std::unexpected(std::string(std::strerror(error)));
    }
    if (family == AF_UNIX) {
        if (auto applied = apply_unix_attributes(spec); !applied) {
            close_socket(fd, spec, file_of(spec));
            return std::unexpected(applied.error());
        }
    }
    return fd;
}

// A kept socket takes the entry's new attributes.
std::expected<void, std::string> update_socket(int fd, const config::ListenSpec& old,
                                               const config::ListenSpec& spec) {
    if (spec.kind != config::ListenKind::udp && spec.backlog != old.backlog &&
        listen(fd, spec.backlog) != 0) {
        return std::unexpected(std::string("cannot change its backlog: ") + std::strerror(errno));
    }
    if (spec.kind == config::ListenKind::unix_ &&
        (spec.mode != old.mode || spec.owner != old.owner || spec.group != old.group)) {
        return apply_unix_attributes(spec);
    }
    return {};
}

}  // namespace

ListenSockets::Staged::~Staged() {
    close_fresh();
}

void ListenSockets::Staged::close_fresh() {
    for (auto& [key, socket] : m_sockets) {
        if (socket.fresh) {
            close_socket(socket.fd, socket.spec, socket.file_ino);
        }
    }
    m_sockets.clear();
}

ListenSockets::Staged::Staged(Staged&& other) noexcept : m_sockets(std::move(other.m_sockets)) {
    other.m_sockets.clear();
}

ListenSockets::Staged& ListenSockets::Staged::operator=(Staged&& other) noexcept {
    if (this != &other) {
        close_fresh();
        m_sockets = std::move(other.m_sockets);
        other.m_sockets.clear();
    }
    return *this;
}

ListenSockets::~ListenSockets() {
    for (auto& [key, socket] : m_current.m_sockets) {
        close_socket(socket.fd, socket.spec, socket.file_ino);
    }
    m_current.m_sockets.clear();
}

std::expected<ListenSockets::Staged, std::vector<config::Diagnostic>> ListenSockets::stage(
    const std::vector<const config::ServiceSpec*>& services) {
    Staged staged;
    std::vector<config::Diagnostic> errors;
    for (const config::ServiceSpec* each : services) {
        const config::ServiceSpec& service = *each;
        const auto& entries = *service.listen;
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const config::ListenSpec& spec = entries[i];
            auto error = [&](const std::string& why) {
                errors.push_back(config::Diagnostic{service.file, spec.line, spec.column,
                                                    "listen[" + std::to_string(i + 1) +
                                                        "]: cannot bind " +
                                                        std::string(config::to_string(spec.kind)) +
                                                        " " + spec.address + ": " + why});
            };
            const std::string key = key_of(spec);
            if (auto seen = staged.m_sockets.find(key); seen != staged.m_sockets.end()) {
                // The instances of one file declare the same entry: one socket.
                const Staged::Socket& first = seen->second;
                if (first.file != service.file || first.spec.line != spec.line ||
                    first.spec.column != spec.column) {
                    error("already declared in " + first.file + ":" +
                          std::to_string(first.spec.line));
                }
                continue;
            }
            auto kept = m_current.m_sockets.find(key);
            if (kept != m_current.m_sockets.end()) {
                if (auto updated = update_socket(kept->second.fd, kept->second.spec, spec);
                    !updated) {
                    error(updated.error());
                }
                staged.m_sockets.emplace(key, Staged::Socket{kept->second.fd, false, spec,
                                                             service.file, kept->second.file_ino});
                continue;
            }
            auto bound = bind_socket(spec);
            if (!bound) {
                error(bound.error());
                continue;
            }
            staged.m_sockets.emplace(
                key, Staged::Socket{*bound, true, spec, service.file, file_of(spec)});
        }
    }
    if (!errors.empty()) {
        return std::unexpected(std::move(errors));  // `staged` closes what it bound
    }
    return staged;
}

void ListenSockets::commit(Staged staged) {
    for (auto& [key, socket] : m_current.m_sockets) {
        if (!staged.m_sockets.contains(key)) {
            close_socket(socket.fd, socket.spec, socket.file_ino);
        }
    }
    for (auto& [key, socket] : staged.m_sockets) {
        socket.fresh = false;
    }
    m_current.m_sockets = std::move(staged.m_sockets);
    staged.m_sockets.clear();
}

std::vector<std::pair<std::string, int>> ListenSockets::kept() const {
    std::vector<std::pair<std::string, int>> out;
    for (const auto& [key, socket] : m_current.m_sockets) {
        out.emplace_back(key, socket.fd);
    }
    return out;
}

void ListenSockets::adopt(const std::string& key, int fd) {
    config::ListenSpec spec;
    const std::size_t space = key.find(' ');
    const std::string kind = key.substr(0, space);
    spec.address = space == std::string::npos ? "" : key.substr(space + 1);
    if (kind == "tcp" || kind == "udp" || kind == "unix") {
        spec.kind = kind == "tcp"   ? config::ListenKind::tcp
                    : kind == "udp" ? config::ListenKind::udp
                                    : config::ListenKind::unix_;
    }
    if (key_of(spec) != key || m_current.m_sockets.contains(key)) {
        close(fd);
        return;
    }
    // Its attributes are the next stage()'s to apply: its entry is not known yet.
    m_current.m_sockets.emplace(key, Staged::Socket{fd, false, spec, "", file_of(spec)});
}

std::vector<ListenFd> ListenSockets::fds_of(const config::ServiceSpec& spec) const {
    std::vector<ListenFd> fds;
    for (const config::ListenSpec& entry : *spec.listen) {
        auto it = m_current.m_sockets.find(key_of(entry));
        if (it != m_current.m_sockets.end()) {
            fds.push_back(ListenFd{it->second.fd, name_of(entry, spec.name)});
        }
    }
    return fds;
}

}  // namespace pkit::shell

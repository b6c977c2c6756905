#include "daemon/shell/control/control_server_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pkit::shell {

bool is_authorized(const PeerCredentials& peer, const SocketOptions& options, uid_t self) {
    if (options.trust_root_and_self && (peer.uid == 0 || peer.uid == self)) {
        return true;
    }
    if (std::ranges::find(options.allowed_uids, peer.uid) != options.allowed_uids.end()) {
        return true;
    }
    if (options.allowed_gid) {
        gid_t gid = *options.allowed_gid;
        return peer.gid == gid || std::ranges::find(peer.groups, gid) != peer.groups.end();
    }
    return false;
}

namespace control_socket {
namespace {

std::string errno_text(int error) {
    return std::strerror(error);
}

// Whether a live process accepts connections on the socket at `path`. A non-blocking
// connect answers at once: ECONNREFUSED means nobody listens; success, or EAGAIN
// (a listener with a full backlog), means somebody does.
std::expected<bool, std::string> socket_is_live(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return std::unexpected("cannot create a socket: " + errno_text(errno));
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    int error = rc == 0 ? 0 : errno;
    ::close(fd);
    if (rc == 0 || error == EAGAIN || error == EINPROGRESS) {
        return true;
    }
    if (error == ECONNREFUSED) {
        return false;
    }
    return std::unexpected("cannot probe " + path + ": " + errno_text(error));
}

}  // namespace

std::expected<void, std::string> prepare_path(const std::string& path) {
    if (path.empty()) {
        return std::unexpected("the control socket path is empty");
    }
    if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
        return std::unexpected("the control socket path " + path + " is too long (max " +
                               std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes)");
    }
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
        std::error_code error;
        bool created = std::filesystem::create_directories(parent, error);
        if (error) {
            return std::unexpected("cannot create " + parent.string() + ": " + error.message());
        }
        if (created) {
            ::chmod(parent.c_str(), 0755);
        }
    }
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        if (errno == ENOENT) {
            return {};
        }
        return std::unexpected("cannot examine " + path + ": " + errno_text(errno));
    }
    if (!S_ISSOCK(info.st_mode)) {
        return std::unexpected(path + " exists and is not a socket");
    }
    auto live = socket_is_live(path);
    if (!live) {
        return std::unexpected(live.error());
    }
    if (*live) {
        return std::unexpected("another process (a running pkitd?) already answers on " + path);
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return std::unexpected("cannot remove the stale socket " + path + ": " + errno_text(errno));
    }
    return {};
}

unsigned socket_mode(const SocketOptions& options) {
    if (!options.allowed_uids.empty()) {
        return 0666;
    }
    return options.allowed_gid ? 0660 : 0600;
}

std::expected<void, std::string> apply_mode(const SocketOptions& options) {
    // Without a control group the socket has pkitd's own group (again, after a reload
    // that removed the group).
    // Only what differs is changed: a reload that changes nothing writes nothing, so a
    // socket on a read-only file system is no error.
    const gid_t group = options.allowed_gid.value_or(::getegid());
    const unsigned mode = socket_mode(options);
    struct stat info {};
    if (::stat(options.path.c_str(), &info) != 0) {
        return std::unexpected("cannot examine " + options.path + ": " + errno_text(errno));
    }
    if (info.st_gid != group && ::chown(options.path.c_str(), static_cast<uid_t>(-1), group) != 0) {
        return std::unexpected("cannot give " + options.path + " its group: " + errno_text(errno));
    }
    if ((info.st_mode & 07777) != mode && ::chmod(options.path.c_str(), mode) != 0) {
        return std::unexpected("cannot set the mode of " + options.path + ": " + errno_text(errno));
    }
    return {};
}

namespace {

// The supplementary groups the kernel recorded at connect time (Linux 4.13+).
std::optional<std::vector<gid_t>> peer_groups(int fd) {
#ifdef SO_PEERGROUPS
    std::vector<gid_t> groups(64);
    for (int attempt = 0; attempt < 2; ++attempt) {
        socklen_t length = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length) == 0) {
            groups.resize(length / sizeof(gid_t));
            return groups;
        }
        if (errno != ERANGE) {
            break;
        }
        groups.resize(length / sizeof(gid_t) + 1);
    }
#else
    (void)fd;
#endif
    return std::nullopt;
}

// The "Groups:" line of /proc/PID/status, for kernels without SO_PEERGROUPS. The peer
// may have exited (or exec'd) since; then it simply gets no group membership.
std::vector<gid_t> proc_groups(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    std::vector<gid_t> groups;
    while (std::getline(status, line)) {
        if (line.starts_with("Groups:")) {
            std::istringstream fields(line.substr(7));
            for (gid_t gid = 0; fields >> gid;) {
                groups.push_back(gid);
            }
            break;
        }
    }
    return groups;
}

}  // namespace

std::optional<PeerCredentials> read_peer_credentials(int fd, bool with_groups) {
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return std::nullopt;
    }
    PeerCredentials peer{credentials.pid, credentials.uid, credentials.gid, {}};
    if (with_groups) {
        auto groups = peer_groups(fd);
        peer.groups = groups ? std::move(*groups) : proc_groups(peer.pid);
    }
    return peer;
}

}  // namespace control_socket
}  // namespace pkit::shell

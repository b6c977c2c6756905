#include "config/services_watch.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string_view>

namespace pkit::config {

namespace {

// Filesystems whose inotify events come from the kernel that changes them. Not NFS,
// CIFS, FUSE and the like, where another machine or a user-space server may change a
// file without an event here.
bool local_events(long type) {
    constexpr std::array<long, 8> k_local{
        0xEF53,      // ext2, ext3, ext4
        0x58465342,  // xfs
        0x9123683E,  // btrfs
        0x01021994,  // tmpfs
        0x794C7630,  // overlayfs (changes made through it: the only ones it allows)
        0xF2F52010,  // f2fs
        0x2FC12FC1,  // zfs
        0x858458F6,  // ramfs
    };
    for (long known : k_local) {
        if (type == known) {
            return true;
        }
    }
    return false;
}

constexpr std::uint32_t k_mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                                 IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                                 IN_ONLYDIR;

}  // namespace

ServicesWatch::~ServicesWatch() {
    stop();
}

void ServicesWatch::stop() {
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
}

void ServicesWatch::start(int dir_fd, std::uint64_t dev, std::uint64_t ino) {
    struct statfs fs {};
    if (::fstatfs(dir_fd, &fs) != 0 || !local_events(static_cast<long>(fs.f_type))) {
        return;
    }
    m_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (m_fd < 0) {
        return;  // no instance left (fs.inotify.max_user_instances): every file checked
    }
    // The open directory itself, not a path that may name another by now.
    std::string path = "/proc/self/fd/" + std::to_string(dir_fd);
    if (::inotify_add_watch(m_fd, path.c_str(), k_mask) < 0) {
        stop();
        return;
    }
    m_dev = dev;
    m_ino = ino;
}

bool ServicesWatch::drain(std::unordered_set<std::string>& names) {
    alignas(inotify_event) char buffer[16384];
    for (;;) {
        ssize_t n = ::read(m_fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return errno == EAGAIN;  // all read
        }
        if (n == 0) {
            return false;
        }
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
            if ((event->mask &
                 (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) != 0) {
                return false;
            }
            // Other names cannot change a service file: a link to elsewhere (a
            // ConfigMap's "..data", say) is checked every time by the caller.
            std::string_view name(event->len > 0 ? event->name : "");
            if (name.ends_with(".toml")) {
                names.emplace(name);
            }
        }
    }
}

std::optional<std::unordered_set<std::string>> ServicesWatch::changes(int dir_fd) {
    struct stat info {};
    if (::fstat(dir_fd, &info) != 0) {
        stop();
        return std::nullopt;
    }
    if (m_fd >= 0 && (info.st_dev != m_dev || info.st_ino != m_ino)) {
        stop();  // another directory under the same name
    }
    if (m_fd >= 0) {
        std::unordered_set<std::string> names;
        if (drain(names)) {
            return names;
        }
        stop();
    }
    start(dir_fd, info.st_dev, info.st_ino);
    return std::nullopt;
}

bool ServicesWatch::covers(std::uint64_t dev, std::uint64_t links) const {
    return m_fd >= 0 && dev == m_dev && links == 1;
}

}  // namespace pkit::config

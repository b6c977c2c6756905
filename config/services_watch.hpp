#pragma once
// ServicesWatch: which files of a services/ directory changed since the last look, as
// inotify(7) tells, so that a reload of a large tree checks only those (LoadCache).
//
// The answer is "these names" only while one watch has been on this very directory
// (device and inode) since the previous look, on a filesystem whose events come from
// the local kernel. Otherwise (the first look, another directory, a watch that
// overflowed or was lost, NFS and the like, no inotify left) it is "anything": the
// caller then checks every file, as it would with no watch at all.
//
// What a directory watch cannot see is left to the caller: a symbolic link's target, a
// file with other hard links (written through another name), a file on another
// device (a bind mount). Such files are checked every time (`covers`).

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

namespace pkit::config {

class ServicesWatch {
public:
    ServicesWatch() = default;
    ~ServicesWatch();
    ServicesWatch(const ServicesWatch&) = delete;
    ServicesWatch& operator=(const ServicesWatch&) = delete;

    // The names ending ".toml" that events named since the last call, for the
    // directory open as `dir_fd`; nullopt for "anything may have changed". Starts a
    // watch when there is none, so that the next call can answer.
    std::optional<std::unordered_set<std::string>> changes(int dir_fd);

    // Whether events tell of every change to a file of the watched directory with this
    // device and link count (a regular file, not reached through a link).
    bool covers(std::uint64_t dev, std::uint64_t links) const;

private:
    void start(int dir_fd, std::uint64_t dev, std::uint64_t ino);
    void stop();
    // Reads every queued event; false when they say anything may have changed.
    bool drain(std::unordered_set<std::string>& names);

    int m_fd = -1;  // the inotify instance; -1: no watch
    std::uint64_t m_dev = 0;
    std::uint64_t m_ino = 0;
};

}  // namespace pkit::config

#pragma once
// The file operations a log file needs, behind an interface: the writer thread calls
// the real ones (PosixLogDisk), and tests put a fake in front of them that fails an
// operation with the errno a full disk, a read-only mount or a removed directory gives
// (ninja's DiskInterface, for the same reason). Every call returns 0 or an errno.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pkit::shell {

class LogDisk {
public:
    virtual ~LogDisk() = default;
    // Opens `path` for appending (and reading, to mend a torn last line), creating it (0640) and
    // its missing parent directories (0755); `fd` and the file's `size` on success.
    virtual int open_append(const std::string& path, int& fd, std::uint64_t& size) = 0;
    // One write(2): `written` bytes of `data` went out (maybe fewer than asked, with 0).
    virtual int write(int fd, std::string_view data, std::size_t& written) = 0;
    // pread(2) of up to `length` bytes at `offset` into `out` (resized to what was read).
    virtual int read_at(int fd, std::uint64_t offset, std::size_t length, std::string& out) = 0;
    virtual int truncate(int fd, std::uint64_t size) = 0;
    virtual int rename(const std::string& from, const std::string& to) = 0;
    // unlink(2); a missing file is no error.
    virtual int remove(const std::string& path) = 0;
    virtual void close(int fd) = 0;
};

// The kernel's.
class PosixLogDisk final : public LogDisk {
public:
    int open_append(const std::string& path, int& fd, std::uint64_t& size) override;
    int write(int fd, std::string_view data, std::size_t& written) override;
    int read_at(int fd, std::uint64_t offset, std::size_t length, std::string& out) override;
    int truncate(int fd, std::uint64_t size) override;
    int rename(const std::string& from, const std::string& to) override;
    int remove(const std::string& path) override;
    void close(int fd) override;
};

}  // namespace pkit::shell

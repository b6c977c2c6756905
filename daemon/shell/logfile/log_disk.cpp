// PosixLogDisk: the log file operations as system calls.

#include "daemon/shell/logfile/log_disk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace pkit::shell {
namespace {

// Creates each missing directory above `path` (0755), as `mkdir -p` of its dirname.
int make_parents(const std::string& path) {
    for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
        std::string dir = path.substr(0, slash);
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
            return errno;
        }
    }
    return 0;
}

}  // namespace

int PosixLogDisk::open_append(const std::string& path, int& fd, std::uint64_t& size) {
    // O_NONBLOCK: a FIFO put at the path since the configuration was checked must not
    // hang the writer; fstat() then refuses anything but a regular file.
    constexpr int k_flags = O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    fd = ::open(path.c_str(), k_flags, 0640);
    if (fd < 0 && errno == ENOENT) {
        if (int error = make_parents(path); error != 0) {
            return error;
        }
        fd = ::open(path.c_str(), k_flags, 0640);
    }
    if (fd < 0) {
        return errno;
    }
    struct stat info {};
    int error = 0;
    if (::fstat(fd, &info) != 0) {
        error = errno;
    } else if (!S_ISREG(info.st_mode)) {
        error = S_ISDIR(info.st_mode) ? EISDIR : EINVAL;
    }
    if (error != 0) {
        ::close(fd);
        fd = -1;
        return error;
    }
    size = static_cast<std::uint64_t>(info.st_size);
    return 0;
}

int PosixLogDisk::write(int fd, std::string_view data, std::size_t& written) {
    written = 0;
    ssize_t n;
    do {
        n = ::write(fd, data.data(), data.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return errno;
    }
    written = static_cast<std::size_t>(n);
    return 0;
}

int PosixLogDisk::read_at(int fd, std::uint64_t offset, std::size_t length, std::string& out) {
    out.resize(length);
    ssize_t n;
    do {
        n = ::pread(fd, out.data(), length, static_cast<off_t>(offset));
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        out.clear();
        return errno;
    }
    out.resize(static_cast<std::size_t>(n));
    return 0;
}

int PosixLogDisk::truncate(int fd, std::uint64_t size) {
    return ::ftruncate(fd, static_cast<off_t>(size)) == 0 ? 0 : errno;
}

int PosixLogDisk::rename(const std::string& from, const std::string& to) {
    return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

int PosixLogDisk::remove(const std::string& path) {
    return ::unlink(path.c_str()) == 0 || errno == ENOENT ? 0 : errno;
}

void PosixLogDisk::close(int fd) {
    ::close(fd);
}

}  // namespace pkit::shell

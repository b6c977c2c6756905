#pragma once
// Helpers of the log-file tests: reading a file's lines, and a LogDisk that fails an
// operation with a chosen errno, as a full disk, a read-only mount or a removed
// directory would, passing every other call to the real one.

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/shell/logfile/log_disk.hpp"

namespace pkit::shell::test {

inline std::vector<std::string> file_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

inline std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

class FaultyDisk final : public LogDisk {
public:
    // Each nonzero errno fails its operation until set back to 0. `write_room`: a
    // write past this many more bytes writes what fits and then fails with ENOSPC,
    // as a filling disk does (a short write, then the error).
    int open_error = 0;
    int write_error = 0;
    int rename_error = 0;
    std::size_t write_room = SIZE_MAX;
    int opens = 0;

    int open_append(const std::string& path, int& fd, std::uint64_t& size) override {
        ++opens;
        return open_error != 0 ? open_error : m_real.open_append(path, fd, size);
    }
    int write(int fd, std::string_view data, std::size_t& written) override {
        written = 0;
        if (write_error != 0) {
            return write_error;
        }
        if (write_room == 0) {
            return ENOSPC;
        }
        std::string_view part = data.substr(0, std::min(data.size(), write_room));
        int error = m_real.write(fd, part, written);
        if (write_room != SIZE_MAX) {
            write_room -= written;
        }
        return error;
    }
    int read_at(int fd, std::uint64_t offset, std::size_t length, std::string& out) override {
        return m_real.read_at(fd, offset, length, out);
    }
    int truncate(int fd, std::uint64_t size) override { return m_real.truncate(fd, size); }
    int rename(const std::string& from, const std::string& to) override {
        return rename_error != 0 ? rename_error : m_real.rename(from, to);
    }
    int remove(const std::string& path) override { return m_real.remove(path); }
    void close(int fd) override { m_real.close(fd); }

private:
    PosixLogDisk m_real;
};

}  // namespace pkit::shell::test

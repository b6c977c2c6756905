// read_back(): the newest lines of a log file and its rotated files.

#include "daemon/shell/logfile/log_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pkit::shell {
namespace {

constexpr std::size_t k_block = 64 * 1024;

std::string errno_text(int error) {
    char buffer[256];
    return ::strerror_r(error, buffer, sizeof buffer);  // GNU: returns the text
}

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

enum class Step { more, done };

// Reads `path` from its end, line by line (newest first), into `out` (newest first).
// Step::done when the query is satisfied and no older file need be read.
std::expected<Step, std::string> read_file(const std::string& path, const config::LogFileSpec& spec,
                                           const ReadBackQuery& query,
                                           std::vector<ParsedLine>& out) {
    Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
    if (file.fd < 0) {
        if (errno == ENOENT) {
            return Step::more;
        }
        return std::unexpected(path + ": " + errno_text(errno));
    }
    struct stat info {};
    if (::fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        return std::unexpected(path + ": not a regular file");
    }
    auto end = static_cast<std::uint64_t>(info.st_size);
    std::string carry;  // the start of a line whose end was read already
    std::string block;
    bool last_line = true;  // the file's last bytes: a line without '\n' there is torn
    // Handles one complete line; Step::done when the query is satisfied.
    auto take = [&](std::string_view line) -> Step {
        auto parsed = parse_log_line(spec.format, line);
        if (!parsed) {
            return Step::more;
        }
        if (query.since && parsed->at < *query.since) {
            return Step::done;
        }
        if (query.before && parsed->at >= *query.before) {
            return Step::more;
        }
        out.push_back(std::move(*parsed));
        return out.size() >= query.max_lines ? Step::done : Step::more;
    };
    while (end > 0) {
        std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(end, k_block));
        block.resize(length);
        std::size_t got = 0;
        while (got < length) {
            ssize_t n = ::pread(file.fd, block.data() + got, length - got,
                                static_cast<off_t>(end - length + got));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return std::unexpected(path + ": " +
                                       (n < 0 ? errno_text(errno) : "shrank while read"));
            }
            got += static_cast<std::size_t>(n);
        }
        end -= length;
        block += carry;  // the block, then the part of a line read before
        std::size_t stop = block.size();
        if (last_line) {
            // What follows the file's last '\n' is a line still being written, or torn.
            std::size_t newline = block.rfind('\n');
            if (newline == std::string::npos) {
                carry = block;
                continue;
            }
            stop = newline;
            last_line = false;
        }
        for (;;) {
            std::size_t newline = stop == 0 ? std::string::npos : block.rfind('\n', stop - 1);
            if (newline == std::string::npos) {
                carry = block.substr(0, stop);
                break;
            }
            if (take(std::string_view(block).substr(newline + 1, stop - newline - 1)) ==
                Step::done) {
                return Step::done;
            }
            stop = newline;
        }
    }
    if (!carry.empty() && !last_line && take(carry) == Step::done) {
        return Step::done;
    }
    return Step::more;
}

}  // namespace

std::expected<std::vector<ParsedLine>, std::string> read_back(const config::LogFileSpec& spec,
                                                              const ReadBackQuery& query) {
    if (spec.format == config::LogFormat::raw) {
        return std::unexpected(spec.path + ": a raw log file holds no times to read back by");
    }
    std::vector<ParsedLine> newest_first;
    if (query.max_lines == 0) {
        return newest_first;
    }
    for (int k = 0; k <= spec.keep; ++k) {
        std::string path = k == 0 ? spec.path : spec.path + "." + std::to_string(k);
        auto step = read_file(path, spec, query, newest_first);
        if (!step) {
            return std::unexpected(step.error());
        }
        if (*step == Step::done) {
            break;
        }
    }
    std::reverse(newest_first.begin(), newest_first.end());
    return newest_first;
}

}  // namespace pkit::shell

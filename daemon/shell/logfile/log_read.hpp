#pragma once
// Reading a log file back (SPEC §18, `pkitctl logs NAME -n N` beyond the tail, or
// `--since` before it): the file and its rotated files, newest first, each read from
// its end in blocks, so the last N lines of a 10 GiB history cost N lines of reading.
// Blocking file I/O: pkitd calls it off the loop (a uv_work), never on it.

#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "config/log_file.hpp"
#include "daemon/shell/logfile/log_format.hpp"

namespace pkit::shell {

struct ReadBackQuery {
    std::size_t max_lines = 1000;  // the newest this many of the lines that match
    std::optional<double> since;   // only lines read at or after this (unix seconds)
    std::optional<double> before;  // only lines read before this (the tail's oldest)
};

// The lines of spec.path, spec.path.1 ... spec.path.keep that match `query`, oldest
// first. Files are taken to be in time order (newest in PATH), as rotation makes them;
// reading stops at the first line older than `since`. A missing file is no error (none
// rotated yet); a line that does not parse in spec.format (a torn line, another
// program's, a drop notice of another format) is skipped. A raw file cannot be read
// back (it holds no times): an error, as is a file that cannot be opened or read.
std::expected<std::vector<ParsedLine>, std::string> read_back(const config::LogFileSpec& spec,
                                                              const ReadBackQuery& query);

}  // namespace pkit::shell

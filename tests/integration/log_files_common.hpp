#pragma once
// Helpers of the log file cases (SPEC §18): services writing numbered lines, and the
// numbers read back from a log file and its rotated files.

#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace pkit::itest {

// A shell loop writing "n I xxx…" (about 100 bytes) for I from `from` to `to`; with
// `paced`, a pause of 5 ms after every 100 lines (200 KB/s at most: a loaded machine's
// writer thread keeps up, so no line is dropped for a full queue).
std::string numbered_script(long from, long to, bool paced = false);
// `command` running numbered_script(from, to), then `then` (e.g. "exec sleep 1000").
std::string numbered_lines(long from, long to, const std::string& then = "exec sleep 1000");

// The numbers of the "n I" lines in `path`, then `path`.1 … `path`.`keep`, oldest file
// first, each file's lines in order.
std::vector<long> numbers_in_files(const std::string& path, int keep);

// Whether `numbers` is exactly first..last, each once, in order.
bool contiguous(const std::vector<long>& numbers, long first, long last);

// The "N" of every "pkitd: N lines dropped" notice in `path`, summed.
long dropped_notices(const std::string& path);

// `name`'s status row.
json status_of(Client& client, const std::string& name);

}  // namespace pkit::itest

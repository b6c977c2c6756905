#pragma once
// Writing a whole buffer to a blocking descriptor or a file (a memfd), through short
// writes and EINTR.

#include <cstddef>
#include <string_view>

namespace pkit::shell {

// Writes `text` to `fd`; returns how much of it was written before a failure (all of
// it without one; errno tells the failure).
std::size_t write_all(int fd, std::string_view text);

}  // namespace pkit::shell

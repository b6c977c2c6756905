#pragma once
// `pkitctl top` (SPEC §17), its pure parts: the frame (the lines of the screen) for a
// sample of status rows, and the terminal output that turns one frame into the next
// redrawing only the lines that changed. ctl/top.cpp does the terminal and the loop.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/status.hpp"

namespace pkit::ctl {

enum class TopSort { cpu, memory, restarts, name };

// The sort a key selects ('c', 'm', 'r', 'n'); nullopt for any other key.
std::optional<TopSort> sort_for_key(char key);

// The CPU seconds of each service's runs at one moment, to compute CPU % from the next.
struct CpuSample {
    double at = 0;  // seconds, any monotonic clock
    std::map<std::string, double, std::less<>> seconds;
};

// One frame: the header line, the column titles, then one line a service, at most
// `height` lines, each cut to `width` columns (0: no limit). CPU % is the CPU time
// used since `before` over the time between the samples, or, without an earlier sample
// of that service, since its run started (cpu seconds over uptime).
std::vector<std::string> top_frame(const std::vector<proto::ServiceStatus>& rows,
                                   const CpuSample& now, const CpuSample* before, TopSort sort,
                                   std::size_t width, std::size_t height);

// The CPU sample of `rows` taken at `at`.
CpuSample cpu_sample(const std::vector<proto::ServiceStatus>& rows, double at);

// What to write to a terminal showing `before` so it shows `after`: each changed
// line is written in place (cursor moved to it, the line, the rest of it cleared), and
// the lines `before` had beyond `after` are cleared; nothing for an unchanged line.
// With `full`, the screen is cleared and every line written (the first frame, and after
// a resize).
std::string frame_diff(const std::vector<std::string>& before,
                       const std::vector<std::string>& after, bool full);

}  // namespace pkit::ctl

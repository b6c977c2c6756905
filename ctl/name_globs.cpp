#include "ctl/name_globs.hpp"

#include <algorithm>

#include "ctl/common.hpp"
#include "ctl/status_filter.hpp"

namespace pkit::ctl {

std::vector<std::string> expand_name_globs(const GlobalOptions& global,
                                           const std::vector<std::string>& names) {
    if (std::ranges::none_of(names, [](const std::string& name) { return is_pattern(name); })) {
        return names;
    }
    proto::Request request{.cmd = proto::Command::status};
    request.fields = {"name", "state"};
    const std::vector<proto::ServiceStatus> rows =
        call_for_rows(global, request, timeout_of(global));
    return expand_patterns(name_states(rows), names);
}

}  // namespace pkit::ctl

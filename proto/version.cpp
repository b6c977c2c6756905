#include "proto/version.hpp"

#include "pkit_build_info.hpp"

namespace pkit::proto {

std::string_view version() {
    return PKIT_VERSION;
}

std::string version_line(std::string_view program) {
    std::string line = std::string(program) + " " + PKIT_VERSION;
    std::string_view revision = PKIT_GIT_REVISION;
    if (!revision.empty()) {
        line += " (git " + std::string(revision) + ")";
    }
    return line;
}

}  // namespace pkit::proto

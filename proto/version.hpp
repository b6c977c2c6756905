#pragma once
// The one place pkitd and pkitctl get their version from. The version is the
// project's (CMakeLists.txt); the git revision comes from a header the build
// regenerates (packaging/cmake/build_info.cmake), read only by version.cpp, so a new
// commit recompiles one file.

#include <string>
#include <string_view>

namespace pkit::proto {

// The project version, e.g. "0.2.0" (ping's and status's `version`).
std::string_view version();

// What `--version` prints: "pkitd 0.2.0", or "pkitd 0.2.0 (git 1a2b3c4d5e)" for a
// build from a git checkout.
std::string version_line(std::string_view program);

}  // namespace pkit::proto

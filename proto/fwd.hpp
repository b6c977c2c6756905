#pragma once
// What a header of the protocol's types needs without the JSON library itself: the
// json alias, declared only (nlohmann/json_fwd.hpp), so a header that just declares
// to_json/from_json does not cost every file that includes it the full
// nlohmann/json.hpp (about 5 s of compile time each); and the protocol's version.
// A file that builds, reads or converts JSON includes <nlohmann/json.hpp> itself.

#include <nlohmann/json_fwd.hpp>

namespace pkit::proto {

using json = nlohmann::json;

// Reported by `ping` and `status`; bumped only for an incompatible change.
inline constexpr int k_protocol_version = 1;

}  // namespace pkit::proto

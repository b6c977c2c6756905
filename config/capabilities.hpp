#pragma once
// Linux capability names and numbers (SPEC §19 `capabilities`), as capabilities(7)
// lists them: pure data, so the loader, pkitd and pkitctl name them alike.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::config {

// The highest capability number named here (CAP_CHECKPOINT_RESTORE, Linux 5.9).
inline constexpr int k_last_capability = 40;

// The number of "CAP_NET_BIND_SERVICE" or "net_bind_service" (any case, with or
// without the "CAP_" prefix); nullopt for a name no capability has.
std::optional<int> capability_number(std::string_view name);
// "CAP_NET_BIND_SERVICE" for 10; "CAP_?" past k_last_capability.
std::string capability_name(int number);
// Every name a mask holds, in number order.
std::vector<std::string> capability_names(std::uint64_t mask);
// Every name, in number order (for suggestions).
std::vector<std::string_view> all_capability_names();

}  // namespace pkit::config

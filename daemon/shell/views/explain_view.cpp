#include "daemon/shell/views/explain_view.hpp"

#include <variant>

#include "daemon/core/explain.hpp"

namespace pkit::shell {

proto::ExplainResult explain_result(const core::Supervisor& supervisor, std::size_t index,
                                    core::Now now) {
    core::Explanation e = core::explain(supervisor, index, now);
    proto::ExplainResult result;
    result.text = e.text;
    for (const auto& [key, value] : e.facts) {
        std::visit([&, &k = key](const auto& v) { result.facts[k] = v; }, value);
    }
    return result;
}

}  // namespace pkit::shell

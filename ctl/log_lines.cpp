#include "ctl/log_lines.hpp"

#include <algorithm>

#include "ctl/time_text.hpp"

namespace pkit::ctl {
namespace {

double at_of(const proto::json& line) {
    auto at = line.find("at");
    return at != line.end() && at->is_number() ? at->get<double>() : 0.0;
}

}  // namespace

proto::json select_lines(const proto::json& lines, const LineSelection& selection) {
    proto::json kept = proto::json::array();
    if (!lines.is_array()) {
        return kept;
    }
    for (const auto& line : lines) {
        if (!selection.stream.empty() && line.value("stream", "") != selection.stream) {
            continue;
        }
        if (selection.since && at_of(line) < *selection.since) {
            continue;
        }
        kept.push_back(line);
    }
    if (selection.last && kept.size() > static_cast<std::size_t>(std::max(0, *selection.last))) {
        kept.erase(kept.begin(), kept.end() - std::max(0, *selection.last));
    }
    return kept;
}

std::string line_text(const std::string& service, const proto::json& line,
                      const LineFormat& format) {
    std::string text;
    if (format.prefixed) {
        text = service;
        text.resize(std::max(text.size(), format.name_width), ' ');
        text += " | ";
    }
    if (format.timestamps) {
        text += clock_text(at_of(line)) + " ";
    }
    return text + line.value("text", "");
}

std::vector<ServiceLine> interleave(const std::vector<std::string>& services,
                                    const std::vector<proto::json>& tails) {
    std::vector<ServiceLine> all;
    for (std::size_t i = 0; i < services.size() && i < tails.size(); ++i) {
        for (const auto& line : tails[i]) {
            all.push_back({services[i], line});
        }
    }
    // Stable: equal times keep the services' order, and each tail is already in order.
    std::ranges::stable_sort(all, {}, [](const ServiceLine& l) { return at_of(l.line); });
    return all;
}

}  // namespace pkit::ctl

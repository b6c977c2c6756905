#include "proto/request.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "proto/json_scan.hpp"
#include "proto/status.hpp"

namespace pkit::proto {
namespace {

using Result = std::expected<Request, Error>;

std::unexpected<Error> fail(ErrorCode code, std::string message, json id = nullptr) {
    return std::unexpected(Error{code, std::move(message), std::move(id)});
}

// How deeply `value` nests, counted without recursion (see k_max_id_depth). Stops
// counting once `limit` is passed.
int nesting_depth(const json& value, int limit) {
    std::vector<std::pair<const json*, int>> pending{{&value, 1}};
    int deepest = 0;
    while (!pending.empty()) {
        auto [node, depth] = pending.back();
        pending.pop_back();
        deepest = std::max(deepest, depth);
        if (deepest > limit) {
            return deepest;
        }
        if (node->is_structured()) {
            for (const auto& child : *node) {
                pending.emplace_back(&child, depth + 1);
            }
        }
    }
    return deepest;
}

// Reads the optional field `name` into `out` when present and not null.
// Returns the error message when the field has the wrong type.
std::optional<std::string> read_bool(const json& object, const char* name, bool& out) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_boolean()) {
        return std::string("\"") + name + "\" must be a boolean";
    }
    out = it->get<bool>();
    return std::nullopt;
}

std::optional<std::string> read_string(const json& object, const char* name, std::string& out) {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_string()) {
        return std::string("\"") + name + "\" must be a string";
    }
    out = it->get<std::string>();
    return std::nullopt;
}

std::optional<std::string> read_services(const json& object, std::vector<std::string>& out) {
    auto it = object.find("services");
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    constexpr const char* k_message = "\"services\" must be an array of strings";
    if (!it->is_array()) {
        return k_message;
    }
    // A name given twice means that service once: duplicates are merged, in order of
    // first mention, so a request names each service at most once.
    std::unordered_set<std::string_view> seen;
    for (const auto& element : *it) {
        if (!element.is_string()) {
            return k_message;
        }
        const auto& name = element.get_ref<const std::string&>();
        if (seen.insert(name).second) {
            out.push_back(name);
        }
    }
    return std::nullopt;
}

// `fields` (status): names of status members, each known (is_status_field), kept once.
std::optional<std::string> read_fields(const json& object, const Request& request,
                                       std::vector<std::string>& out) {
    auto it = object.find("fields");
    if (request.cmd != Command::status || it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    constexpr const char* k_message = "\"fields\" must be an array of strings";
    if (!it->is_array()) {
        return k_message;
    }
    for (const auto& element : *it) {
        if (!element.is_string()) {
            return k_message;
        }
        const auto& name = element.get_ref<const std::string&>();
        if (!is_status_field(name)) {
            // Only a short excerpt of the name is echoed back, as for "cmd".
            auto shown = name.size() > 64 ? name.substr(0, 64) + "..." : name;
            return "\"fields\": \"" + shown + "\" is not a field of a service's status";
        }
        if (std::ranges::find(out, name) == out.end()) {
            out.push_back(name);
        }
    }
    return std::nullopt;
}

// `lines` is a non-negative integer; a count beyond int is clamped, since asking for
// more lines than any tail holds simply means "all of them".
std::optional<std::string> read_lines(const json& object, int& out) {
    auto it = object.find("lines");
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    constexpr const char* k_message = "\"lines\" must be a non-negative integer";
    if (it->is_number_unsigned()) {
        auto value = it->get<std::uint64_t>();
        out = value > INT_MAX ? INT_MAX : static_cast<int>(value);
        return std::nullopt;
    }
    return k_message;  // negative, fractional, or not a number at all
}

// `instances` (scale): an integer from 1 to k_max_scale; 0 is refused (stop does that).
std::optional<std::string> read_instances(const json& object, int& out) {
    auto it = object.find("instances");
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > k_max_scale) {
        return "\"instances\" must be an integer from 1 to " + std::to_string(k_max_scale) +
               " (to stop every instance, use stop)";
    }
    out = static_cast<int>(it->get<std::int64_t>());
    return std::nullopt;
}

// `within` (wait): a finite, non-negative number of seconds. Capped at a year, so
// that the deadline pkitd computes from it cannot overflow its clock.
std::optional<std::string> read_within(const json& object, double& out) {
    auto it = object.find("within");
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
        return "\"within\" must be a non-negative number of seconds";
    }
    out = std::min(it->get<double>(), 365.0 * 24 * 3600);
    return std::nullopt;
}

// `since` (logs): unix seconds, a finite number.
std::optional<std::string> read_since(const json& object, std::optional<double>& out) {
    auto it = object.find("since");
    if (it == object.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
        return "\"since\" must be a number of unix seconds";
    }
    out = it->get<double>();
    return std::nullopt;
}

// The per-command argument rules of SPEC §9.
std::optional<std::string> check_arguments(const Request& request) {
    switch (request.cmd) {
        case Command::wait:
            if (request.wait_for != "ready" && request.wait_for != "done" &&
                request.wait_for != "stopped") {
                return "\"for\" must be \"ready\", \"done\" or \"stopped\"";
            }
            [[fallthrough]];
        case Command::start:
        case Command::stop:
        case Command::restart:
        case Command::signal:
        case Command::pause:
        case Command::resume:
            if (request.services.empty() && !request.all) {
                return "\"services\" must name at least one service, or \"all\" must be true";
            }
            if (request.cmd == Command::signal && request.signal.empty()) {
                return "\"signal\" is required";
            }
            return std::nullopt;
        case Command::logs:
        case Command::explain:
            if (request.service.empty()) {
                return "\"service\" is required";
            }
            return std::nullopt;
        case Command::scale:
            if (request.service.empty()) {
                return "\"service\" is required";
            }
            if (request.instances == 0) {
                return "\"instances\" is required";
            }
            return std::nullopt;
        case Command::ping:
        case Command::status:
        case Command::events:
        case Command::reload:
        case Command::reload_preview:
        case Command::shutdown:
        case Command::health:
        case Command::upgrade:
        case Command::rotate:
            return std::nullopt;
    }
    return std::nullopt;
}

Result parse_object(json& object) {
    Request request;
    if (auto it = object.find("id"); it != object.end()) {
        if (nesting_depth(*it, k_max_id_depth) > k_max_id_depth) {
            return fail(ErrorCode::bad_request, "\"id\" is nested too deeply");
        }
        request.id = std::move(*it);
    }
    auto cmd = object.find("cmd");
    if (cmd == object.end()) {
        return fail(ErrorCode::bad_request, "\"cmd\" is required", std::move(request.id));
    }
    if (!cmd->is_string()) {
        return fail(ErrorCode::bad_request, "\"cmd\" must be a string", std::move(request.id));
    }
    const auto& name = cmd->get_ref<const std::string&>();
    auto command = command_from_string(name);
    if (!command) {
        // Only a short, known-valid excerpt of the name is echoed back.
        auto shown = name.size() > 64 ? name.substr(0, 64) + "..." : name;
        return fail(ErrorCode::unknown_command, "unknown command \"" + shown + "\"",
                    std::move(request.id));
    }
    request.cmd = *command;
    for (auto problem :
         {read_services(object, request.services), read_bool(object, "all", request.all),
          read_string(object, "signal", request.signal), read_bool(object, "group", request.group),
          read_string(object, "service", request.service), read_lines(object, request.lines),
          read_bool(object, "previous", request.previous),
          read_bool(object, "follow", request.follow), read_since(object, request.since),
          read_string(object, "for", request.wait_for), read_within(object, request.within),
          read_bool(object, "no_block", request.no_block),
          read_bool(object, "resources", request.resources),
          read_bool(object, "rolling", request.rolling),
          read_fields(object, request, request.fields), read_instances(object, request.instances),
          read_string(object, "binary", request.binary), check_arguments(request)}) {
        if (problem) {
            return fail(ErrorCode::bad_request, std::move(*problem), std::move(request.id));
        }
    }
    return request;
}

}  // namespace

std::expected<Request, Error> parse_request(std::string_view line) noexcept {
    try {
        // The request's own object is one level more.
        if (json_deeper_than(line, k_max_request_depth + 1)) {
            return fail(ErrorCode::bad_request, "the request is nested more than " +
                                                    std::to_string(k_max_request_depth) +
                                                    " levels deep");
        }
        auto value = json::parse(line, nullptr, false);
        if (value.is_discarded()) {
            return fail(ErrorCode::bad_request, "the request is not valid JSON");
        }
        if (!value.is_object()) {
            return fail(ErrorCode::bad_request, "the request must be a JSON object");
        }
        return parse_object(value);
    } catch (...) {
        // Only allocation failure can get here; the request is refused, pkitd goes on.
        return fail(ErrorCode::bad_request, "the request could not be processed");
    }
}

void to_json(json& out, const Request& request) {
    out = json::object();
    out["id"] = request.id;
    out["cmd"] = to_string(request.cmd);
    switch (request.cmd) {
        case Command::status:
        case Command::rotate:
            if (!request.services.empty()) {
                out["services"] = request.services;
            }
            if (request.resources && request.cmd == Command::status) {
                out["resources"] = true;
            }
            if (!request.fields.empty() && request.cmd == Command::status) {
                out["fields"] = request.fields;
            }
            break;
        case Command::start:
        case Command::stop:
        case Command::restart:
        case Command::signal:
        case Command::pause:
        case Command::resume:
            if (request.all) {
                out["all"] = true;
            } else {
                out["services"] = request.services;
            }
            if (request.cmd == Command::signal) {
                out["signal"] = request.signal;
                out["group"] = request.group;
            }
            if (request.no_block && request.cmd != Command::signal) {
                out["no_block"] = true;
            }
            if (request.rolling && request.cmd == Command::restart) {
                out["rolling"] = true;
            }
            break;
        case Command::wait:
            if (request.all) {
                out["all"] = true;
            } else {
                out["services"] = request.services;
            }
            out["for"] = request.wait_for;
            out["within"] = request.within;
            break;
        case Command::logs:
            out["service"] = request.service;
            out["lines"] = request.lines;
            out["previous"] = request.previous;
            out["follow"] = request.follow;
            if (request.since) {
                out["since"] = *request.since;
            }
            break;
        case Command::explain:
            out["service"] = request.service;
            break;
        case Command::scale:
            out["service"] = request.service;
            out["instances"] = request.instances;
            break;
        case Command::reload:
            if (request.no_block) {
                out["no_block"] = true;
            }
            break;
        case Command::reload_preview:
        case Command::ping:
        case Command::events:
        case Command::shutdown:
        case Command::health:
            break;
        case Command::upgrade:
            if (!request.binary.empty()) {
                out["binary"] = request.binary;
            }
            break;
    }
}

std::string request_line(const Request& request) {
    return json(request).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace pkit::proto

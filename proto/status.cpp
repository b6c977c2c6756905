#include "proto/status.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>

#include "proto/json_writer.hpp"
#include "proto/optional_json.hpp"
#include "proto/status_members.hpp"

namespace pkit::proto {

using detail::daemon_members;
using detail::exit_members;
using detail::field_from_json;
using detail::health_members;
using detail::log_file_members;
using detail::optional_from_json;
using detail::optional_to_json;
using detail::resources_members;
using detail::schedule_members;
using detail::service_members;

namespace {

// Builds an nlohmann object from a member list.
template <typename S, typename Members>
json object_from(const S& value, Members members) {
    json out = json::object();
    members(value, [&](const char* key, const auto& member) {
        if constexpr (requires { member.asked; }) {
            if (member.asked) {
                out[key] = optional_to_json(member.value);
            }
        } else if constexpr (requires { member.has_value(); }) {
            out[key] = optional_to_json(member);
        } else {
            out[key] = json(member);
        }
    });
    return out;
}

void write(JsonWriter& w, const ExitInfo& value);
void write(JsonWriter& w, const HealthInfo& value);
void write(JsonWriter& w, const Resources& value);
void write(JsonWriter& w, const ScheduleInfo& value);
void write(JsonWriter& w, const LogFileInfo& value);

// Writes one member's value: scalars directly, nested objects through write().
template <typename T>
void write_member(JsonWriter& w, const T& member) {
    if constexpr (requires { member.has_value(); }) {
        if (member) {
            write_member(w, *member);
        } else {
            w.null();
        }
    } else if constexpr (std::is_same_v<T, ExitInfo> || std::is_same_v<T, HealthInfo> ||
                         std::is_same_v<T, Resources> || std::is_same_v<T, ScheduleInfo> ||
                         std::is_same_v<T, LogFileInfo>) {
        write(w, member);
    } else if constexpr (std::is_same_v<T, CgroupsInfo> || std::is_same_v<T, ResourceLimitsInfo> ||
                         std::is_same_v<T, std::vector<std::string>>) {
        w.value(json(member));
    } else {
        w.value(member);
    }
}

template <typename S, typename Members>
void write_object(JsonWriter& w, const S& value, Members members) {
    w.begin_object();
    members(value, [&](const char* key, const auto& member) {
        if constexpr (requires { member.asked; }) {
            if (member.asked) {
                w.key(key);
                write_member(w, member.value);
            }
        } else {
            w.key(key);
            write_member(w, member);
        }
    });
    w.end_object();
}

constexpr auto k_exit = [](auto& v, auto&& f) { exit_members(v, f); };
constexpr auto k_health = [](auto& v, auto&& f) { health_members(v, f); };
constexpr auto k_resources = [](auto& v, auto&& f) { resources_members(v, f); };
constexpr auto k_schedule = [](auto& v, auto&& f) { schedule_members(v, f); };
constexpr auto k_log_file = [](auto& v, auto&& f) { log_file_members(v, f); };
constexpr auto k_service = [](auto& v, auto&& f) { service_members(v, f); };
constexpr auto k_daemon = [](auto& v, auto&& f) { daemon_members(v, f); };

void write(JsonWriter& w, const ExitInfo& value) {
    write_object(w, value, k_exit);
}
void write(JsonWriter& w, const HealthInfo& value) {
    write_object(w, value, k_health);
}
void write(JsonWriter& w, const Resources& value) {
    write_object(w, value, k_resources);
}
void write(JsonWriter& w, const ScheduleInfo& value) {
    write_object(w, value, k_schedule);
}
void write(JsonWriter& w, const LogFileInfo& value) {
    write_object(w, value, k_log_file);
}

// Which members of a status object a reply carries, by position in service_members:
// every one, or "name" and those named in `fields` (already checked by parse_request).
std::vector<bool> kept_members(const std::vector<std::string>& fields) {
    std::vector<bool> keep;
    const ServiceStatus example;
    service_members(example, [&](const char* key, const auto&) {
        keep.push_back(fields.empty() || std::string_view(key) == "name" ||
                       std::ranges::find(fields, key) != fields.end());
    });
    return keep;
}

// The "services" member: `count` rows, the k-th written once `row(k)` returned it.
template <typename Row>
void write_services(JsonWriter& w, std::size_t count, Row&& row,
                    const std::vector<std::string>& fields = {}) {
    w.key("services");
    w.begin_array();
    const std::vector<bool> keep = fields.empty() ? std::vector<bool>{} : kept_members(fields);
    const std::size_t before = w.size();
    for (std::size_t k = 0; k < count; ++k) {
        if (k == 1) {
            // The first row says what the others take, better than the guess of
            // row_bytes: growing a reply of megabytes copies it into fresh pages.
            w.reserve((count - 1) * (w.size() - before) * 9 / 8);
        }
        const ServiceStatus& service = row(k);
        if (fields.empty()) {
            write_object(w, service, k_service);
            continue;
        }
        std::size_t i = 0;
        write_object(w, service, [&](auto& v, auto&& f) {
            service_members(v, [&](const char* key, const auto& member) {
                if (keep[i++]) {
                    f(key, member);
                }
            });
        });
    }
    w.end_array();
}

void write_services(JsonWriter& w, const std::vector<ServiceStatus>& services,
                    const std::vector<std::string>& fields = {}) {
    write_services(
        w, services.size(), [&](std::size_t k) -> const ServiceStatus& { return services[k]; },
        fields);
}

// {"id":ID,"ok":true,"result":{ then the result's members, then }}\n.
// About 420 bytes a whole service object, about 110 with pkitctl's table's fields: one
// allocation for the whole reply (growing a 4 MB string copies it into fresh pages).
std::size_t row_bytes(const std::vector<std::string>& fields) {
    return fields.empty() ? 448 : 128;
}

template <typename Body>
std::string reply_with(const json& id, std::size_t services, Body body,
                       std::size_t bytes_a_service = row_bytes({})) {
    std::string out;
    out.reserve(256 + services * bytes_a_service);
    JsonWriter w(out);
    w.begin_object();
    w.key("id");
    w.value(id);
    w.key("ok");
    w.value(true);
    w.key("result");
    w.begin_object();
    body(w);
    w.end_object();
    w.end_object();
    out.push_back('\n');
    return out;
}

}  // namespace

std::string ok_reply(const json& id, const StatusResult& result,
                     const std::vector<std::string>& fields) {
    return reply_with(
        id, result.services.size(),
        [&](JsonWriter& w) {
            w.key("daemon");
            write_object(w, result.daemon, k_daemon);
            write_services(w, result.services, fields);
        },
        row_bytes(fields));
}

std::string ok_status_reply(const json& id, const DaemonStatus& daemon, std::size_t count,
                            const std::function<void(std::size_t, ServiceStatus&)>& fill,
                            const std::vector<std::string>& fields) {
    ServiceStatus row;
    return reply_with(
        id, count,
        [&](JsonWriter& w) {
            w.key("daemon");
            write_object(w, daemon, k_daemon);
            write_services(
                w, count,
                [&](std::size_t k) -> const ServiceStatus& {
                    fill(k, row);
                    return row;
                },
                fields);
        },
        row_bytes(fields));
}

bool is_status_field(std::string_view name) {
    return std::ranges::find(status_fields(), name) != status_fields().end();
}

const std::vector<std::string>& status_fields() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        const ServiceStatus example;
        service_members(example, [&](const char* key, const auto&) { out.emplace_back(key); });
        return out;
    }();
    return names;
}

std::string ok_reply(const json& id, const ServicesResult& result) {
    return reply_with(id, result.services.size(),
                      [&](JsonWriter& w) { write_services(w, result.services); });
}

void to_json(json& out, const Resources& value) {
    out = object_from(value, k_resources);
}

void from_json(const json& in, Resources& value) {
    field_from_json(in, "processes", value.processes);
    field_from_json(in, "cpu_seconds", value.cpu_seconds);
    field_from_json(in, "rss_bytes", value.rss_bytes);
}

void to_json(json& out, const ScheduleInfo& value) {
    out = object_from(value, k_schedule);
}

void from_json(const json& in, ScheduleInfo& value) {
    in.at("expression").get_to(value.expression);
    optional_from_json(in, "next", value.next);
    optional_from_json(in, "last_started", value.last_started);
    optional_from_json(in, "last_result", value.last_result);
    field_from_json(in, "missed", value.missed);
}

void to_json(json& out, const LogFileInfo& value) {
    out = object_from(value, k_log_file);
}

void from_json(const json& in, LogFileInfo& value) {
    in.at("path").get_to(value.path);
    field_from_json(in, "size", value.size);
    field_from_json(in, "rotations", value.rotations);
    field_from_json(in, "dropped", value.dropped);
}

void to_json(json& out, const ExitInfo& value) {
    out = object_from(value, k_exit);
}

void from_json(const json& in, ExitInfo& value) {
    optional_from_json(in, "code", value.code);
    optional_from_json(in, "signal", value.signal);
    field_from_json(in, "duration", value.duration);
    field_from_json(in, "at", value.at);
    field_from_json(in, "timed_out", value.timed_out);
    optional_from_json(in, "killed_by", value.killed_by);
    field_from_json(in, "oom_killed", value.oom_killed);
}

void to_json(json& out, const ResourceLimitsInfo& value) {
    json not_applied = json::array();
    for (const LimitNotApplied& n : value.not_applied) {
        not_applied.push_back(json{{"key", n.key}, {"reason", n.reason}});
    }
    out = json{{"applied", value.applied}, {"not_applied", std::move(not_applied)}};
}

void from_json(const json& in, ResourceLimitsInfo& value) {
    field_from_json(in, "applied", value.applied);
    if (auto it = in.find("not_applied"); it != in.end() && !it->is_null()) {
        value.not_applied.clear();
        for (const json& n : it->get_ref<const json::array_t&>()) {
            LimitNotApplied entry;
            field_from_json(n, "key", entry.key);
            field_from_json(n, "reason", entry.reason);
            value.not_applied.push_back(std::move(entry));
        }
    }
}

void to_json(json& out, const HealthInfo& value) {
    out = object_from(value, k_health);
}

void from_json(const json& in, HealthInfo& value) {
    in.at("status").get_to(value.status);
    field_from_json(in, "failures", value.failures);
}

void to_json(json& out, const ServiceStatus& value) {
    out = object_from(value, k_service);
}

void from_json(const json& in, ServiceStatus& value) {
    in.at("name").get_to(value.name);
    in.at("state").get_to(value.state);
    optional_from_json(in, "group", value.group);
    optional_from_json(in, "pid", value.pid);
    field_from_json(in, "run", value.run);
    optional_from_json(in, "started_at", value.started_at);
    optional_from_json(in, "uptime", value.uptime);
    field_from_json(in, "ready", value.ready);
    field_from_json(in, "restarts", value.restarts);
    field_from_json(in, "storm_pauses", value.storm_pauses);
    field_from_json(in, "liveness_kills", value.liveness_kills);
    optional_from_json(in, "stopped", value.stopped);
    optional_from_json(in, "next_restart_in", value.next_restart_in);
    optional_from_json(in, "health", value.health);
    optional_from_json(in, "notify_status", value.notify_status);
    optional_from_json(in, "last_exit", value.last_exit);
    optional_from_json(in, "last_launch_error", value.last_launch_error);
    field_from_json(in, "type", value.type);
    field_from_json(in, "stop_timeout", value.stop_timeout);
    optional_from_json(in, "ready_timeout", value.ready_timeout);
    optional_from_json(in, "draining_pid", value.draining_pid);
    optional_from_json(in, "schedule", value.schedule);
    optional_from_json(in, "log_file", value.log_file);
    optional_from_json(in, "resource_limits", value.resource_limits);
    optional_from_json(in, "security", value.security);
    if (in.contains("resources")) {
        value.resources.asked = true;
        optional_from_json(in, "resources", value.resources.value);
    }
}

void to_json(json& out, const DaemonStatus& value) {
    out = object_from(value, k_daemon);
}

void from_json(const json& in, DaemonStatus& value) {
    field_from_json(in, "pid", value.pid);
    field_from_json(in, "version", value.version);
    field_from_json(in, "protocol", value.protocol);
    field_from_json(in, "uptime", value.uptime);
    field_from_json(in, "config_dir", value.config_dir);
    field_from_json(in, "socket", value.socket);
    field_from_json(in, "state", value.state);
    field_from_json(in, "orphans_reaped", value.orphans_reaped);
    field_from_json(in, "storm_pauses", value.storm_pauses);
    field_from_json(in, "cgroups", value.cgroups);
}

void to_json(json& out, const CgroupsInfo& value) {
    out = json{{"enabled", value.enabled},
               {"path", optional_to_json(value.path)},
               {"controllers", value.controllers},
               {"reason", optional_to_json(value.reason)}};
}

void from_json(const json& in, CgroupsInfo& value) {
    field_from_json(in, "enabled", value.enabled);
    optional_from_json(in, "path", value.path);
    field_from_json(in, "controllers", value.controllers);
    optional_from_json(in, "reason", value.reason);
}

void to_json(json& out, const PingResult& value) {
    out = json{{"pid", value.pid},
               {"version", value.version},
               {"protocol", value.protocol},
               {"uptime", value.uptime}};
}

void from_json(const json& in, PingResult& value) {
    field_from_json(in, "pid", value.pid);
    field_from_json(in, "version", value.version);
    field_from_json(in, "protocol", value.protocol);
    field_from_json(in, "uptime", value.uptime);
}

void to_json(json& out, const StatusResult& value) {
    out = json{{"daemon", value.daemon}, {"services", value.services}};
}

void from_json(const json& in, StatusResult& value) {
    field_from_json(in, "daemon", value.daemon);
    in.at("services").get_to(value.services);
}

void to_json(json& out, const ServicesResult& value) {
    out = json{{"services", value.services}};
}

void from_json(const json& in, ServicesResult& value) {
    in.at("services").get_to(value.services);
}

}  // namespace pkit::proto

#include "proto/status.hpp"

#include "proto/optional_json.hpp"

namespace pkit::proto {

using detail::field_from_json;
using detail::optional_from_json;
using detail::optional_to_json;

void to_json(json& out, const ExitInfo& value) {
    out = json{
        {"code", optional_to_json(value.code)}, {"signal", optional_to_json(value.signal)},
        {"duration", value.duration},           {"at", value.at},
        {"timed_out", value.timed_out},         {"killed_by", optional_to_json(value.killed_by)}};
}

void from_json(const json& in, ExitInfo& value) {
    optional_from_json(in, "code", value.code);
    optional_from_json(in, "signal", value.signal);
    field_from_json(in, "duration", value.duration);
    field_from_json(in, "at", value.at);
    field_from_json(in, "timed_out", value.timed_out);
    optional_from_json(in, "killed_by", value.killed_by);
}

void to_json(json& out, const HealthInfo& value) {
    out = json{{"status", value.status}, {"failures", value.failures}};
}

void from_json(const json& in, HealthInfo& value) {
    in.at("status").get_to(value.status);
    field_from_json(in, "failures", value.failures);
}

void to_json(json& out, const ServiceStatus& value) {
    out = json{{"name", value.name},
               {"state", value.state},
               {"group", optional_to_json(value.group)},
               {"pid", optional_to_json(value.pid)},
               {"run", value.run},
               {"started_at", optional_to_json(value.started_at)},
               {"uptime", optional_to_json(value.uptime)},
               {"ready", value.ready},
               {"restarts", value.restarts},
               {"storm_pauses", value.storm_pauses},
               {"liveness_kills", value.liveness_kills},
               {"stopped", optional_to_json(value.stopped)},
               {"next_restart_in", optional_to_json(value.next_restart_in)},
               {"health", optional_to_json(value.health)},
               {"notify_status", optional_to_json(value.notify_status)},
               {"last_exit", optional_to_json(value.last_exit)},
               {"last_launch_error", optional_to_json(value.last_launch_error)}};
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
}

void to_json(json& out, const DaemonStatus& value) {
    out = json{{"pid", value.pid},
               {"version", value.version},
               {"protocol", value.protocol},
               {"uptime", value.uptime},
               {"config_dir", value.config_dir},
               {"socket", value.socket},
               {"state", value.state},
               {"orphans_reaped", value.orphans_reaped},
               {"storm_pauses", value.storm_pauses}};
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

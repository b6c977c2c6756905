#pragma once
// The members of each status object (SPEC §5), listed once for every reader and writer
// of them in pkitproto (status.cpp's two writers and nlohmann reader, status_rows.cpp's
// streaming reader): f(key, member) in key order, since nlohmann's objects sort their
// keys, so to_json and the JsonWriter give the same bytes. S is the struct, const or
// not. Internal to pkitproto.

#include "proto/status.hpp"

namespace pkit::proto::detail {

template <typename S, typename F>
void exit_members(S& v, F&& f) {
    f("at", v.at);
    f("code", v.code);
    f("duration", v.duration);
    f("killed_by", v.killed_by);
    f("oom_killed", v.oom_killed);
    f("signal", v.signal);
    f("timed_out", v.timed_out);
}

template <typename S, typename F>
void health_members(S& v, F&& f) {
    f("failures", v.failures);
    f("status", v.status);
}

template <typename S, typename F>
void resources_members(S& v, F&& f) {
    f("cpu_seconds", v.cpu_seconds);
    f("processes", v.processes);
    f("rss_bytes", v.rss_bytes);
}

template <typename S, typename F>
void limits_members(S& v, F&& f) {
    f("applied", v.applied);
    f("not_applied", v.not_applied);
}

template <typename S, typename F>
void not_applied_members(S& v, F&& f) {
    f("key", v.key);
    f("reason", v.reason);
}

template <typename S, typename F>
void schedule_members(S& v, F&& f) {
    f("expression", v.expression);
    f("last_result", v.last_result);
    f("last_started", v.last_started);
    f("missed", v.missed);
    f("next", v.next);
}

template <typename S, typename F>
void log_file_members(S& v, F&& f) {
    f("dropped", v.dropped);
    f("path", v.path);
    f("rotations", v.rotations);
    f("size", v.size);
}

template <typename S, typename F>
void service_members(S& v, F&& f) {
    f("draining_pid", v.draining_pid);
    f("group", v.group);
    f("health", v.health);
    f("last_exit", v.last_exit);
    f("last_launch_error", v.last_launch_error);
    f("liveness_kills", v.liveness_kills);
    f("log_file", v.log_file);
    f("name", v.name);
    f("next_restart_in", v.next_restart_in);
    f("notify_status", v.notify_status);
    f("pid", v.pid);
    f("ready", v.ready);
    f("ready_timeout", v.ready_timeout);
    f("resource_limits", v.resource_limits);
    f("resources", v.resources);
    f("restarts", v.restarts);
    f("run", v.run);
    f("schedule", v.schedule);
    f("security", v.security);
    f("started_at", v.started_at);
    f("state", v.state);
    f("stop_timeout", v.stop_timeout);
    f("stopped", v.stopped);
    f("storm_pauses", v.storm_pauses);
    f("type", v.type);
    f("uptime", v.uptime);
}

template <typename S, typename F>
void daemon_members(S& v, F&& f) {
    f("cgroups", v.cgroups);
    f("config_dir", v.config_dir);
    f("orphans_reaped", v.orphans_reaped);
    f("pid", v.pid);
    f("protocol", v.protocol);
    f("socket", v.socket);
    f("state", v.state);
    f("storm_pauses", v.storm_pauses);
    f("uptime", v.uptime);
    f("version", v.version);
}

}  // namespace pkit::proto::detail

// The SPEC §5 status objects: exact names and types, optional fields as null.

#include "tests/unit/proto/proto_doctest.hpp"

#include "proto/results.hpp"
#include "proto/status.hpp"

using namespace pkit::proto;

namespace {

template <typename T>
T round_trip(const T& value) {
    return json::parse(json(value).dump()).get<T>();
}

ServiceStatus full_status() {
    ServiceStatus status;
    status.name = "api";
    status.state = "running";
    status.group = "backend";
    status.pid = 4242;
    status.run = 3;
    status.started_at = 1700000000.25;
    status.uptime = 12.5;
    status.ready = true;
    status.restarts = 2;
    status.storm_pauses = 1;
    status.liveness_kills = 1;
    status.next_restart_in = 0.5;
    status.health = HealthInfo{"healthy", 0};
    status.notify_status = "serving";
    status.last_exit = ExitInfo{.code = std::nullopt,
                                .signal = "SIGKILL",
                                .duration = 3.5,
                                .at = 1700000001.0,
                                .timed_out = false,
                                .killed_by = "liveness"};
    status.last_launch_error = "not_found: /x: No such file or directory";
    return status;
}

}  // namespace

TEST_CASE("an empty service status writes every key, optional ones as null") {
    ServiceStatus status;
    status.name = "web";
    status.state = "waiting";
    auto value = json(status);
    for (auto key : {"name", "state", "group", "pid", "run", "started_at", "uptime", "ready",
                     "restarts", "storm_pauses", "liveness_kills", "stopped", "next_restart_in",
                     "health", "notify_status", "last_exit", "last_launch_error"}) {
        CHECK_MESSAGE(value.contains(key), key);
    }
    for (auto key : {"type", "stop_timeout", "ready_timeout", "draining_pid", "schedule",
                     "resource_limits", "security", "log_file"}) {
        CHECK_MESSAGE(value.contains(key), key);
    }
    CHECK(value.size() == 25);
    CHECK(value["type"] == "service");
    CHECK(value["stop_timeout"] == 5.0);
    for (auto key : {"group", "pid", "started_at", "uptime", "stopped", "next_restart_in", "health",
                     "notify_status", "last_exit", "last_launch_error", "ready_timeout", "schedule",
                     "resource_limits", "security", "log_file"}) {
        CHECK_MESSAGE(value[key].is_null(), key);
    }
    CHECK(value["run"] == 0);
    CHECK(value["ready"] == false);
    CHECK(round_trip(status) == status);
}

TEST_CASE("a full service status round-trips with the wire types of SPEC §5") {
    auto status = full_status();
    auto value = json(status);
    CHECK(value["pid"].is_number_integer());
    CHECK(value["started_at"].is_number_float());
    CHECK(value["health"] == json{{"status", "healthy"}, {"failures", 0}});
    CHECK(value["last_exit"] == json{{"code", nullptr},
                                     {"signal", "SIGKILL"},
                                     {"duration", 3.5},
                                     {"at", 1700000001.0},
                                     {"timed_out", false},
                                     {"killed_by", "liveness"},
                                     {"oom_killed", false}});
    CHECK(round_trip(status) == status);
}

TEST_CASE("resource_limits and an OOM-killed exit round-trip") {
    auto status = full_status();
    status.last_exit->oom_killed = true;
    status.resource_limits = ResourceLimitsInfo{
        .applied = {"cpu_max", "pids_max"},
        .not_applied = {{"memory_max", "the memory controller is not available in /sys/x"}}};
    auto value = json(status);
    CHECK(value["last_exit"]["oom_killed"] == true);
    CHECK(value["resource_limits"] ==
          json{{"applied", {"cpu_max", "pids_max"}},
               {"not_applied",
                {{{"key", "memory_max"},
                  {"reason", "the memory controller is not available in /sys/x"}}}}});
    CHECK(round_trip(status) == status);
    // The reply writer gives the same bytes as the tree.
    CHECK(json::parse(ok_reply(json(1), ServicesResult{{status}})) ==
          json{{"id", 1}, {"ok", true}, {"result", ServicesResult{{status}}}});
}

TEST_CASE("daemon status, ping and status results round-trip") {
    DaemonStatus daemon{.pid = 1,
                        .version = "0.1.0",
                        .protocol = 1,
                        .uptime = 3.0,
                        .config_dir = "/etc/pkit",
                        .socket = "/run/pkit/pkitd.sock",
                        .state = "shutting_down",
                        .orphans_reaped = 4,
                        .storm_pauses = 0,
                        .cgroups = {.enabled = true,
                                    .path = "/sys/fs/cgroup/pkit",
                                    .controllers = {"cpu", "memory"},
                                    .reason = std::nullopt}};
    auto value = json(daemon);
    CHECK(value.size() == 10);
    CHECK(value["state"] == "shutting_down");
    CHECK(value["cgroups"] == json{{"enabled", true},
                                   {"path", "/sys/fs/cgroup/pkit"},
                                   {"controllers", {"cpu", "memory"}},
                                   {"reason", nullptr}});
    CHECK(round_trip(daemon) == daemon);
    DaemonStatus without = daemon;
    without.cgroups = {.enabled = false, .reason = "cgroups = \"off\""};
    CHECK(json(without)["cgroups"] == json{{"enabled", false},
                                           {"path", nullptr},
                                           {"controllers", json::array()},
                                           {"reason", "cgroups = \"off\""}});
    CHECK(round_trip(without) == without);

    StatusResult result{daemon, {full_status()}};
    CHECK(round_trip(result) == result);
    CHECK(json(result)["services"][0]["name"] == "api");

    PingResult ping{.pid = 7, .version = "0.1.0", .protocol = k_protocol_version, .uptime = 1};
    CHECK(json(ping) == json{{"pid", 7}, {"version", "0.1.0"}, {"protocol", 1}, {"uptime", 1.0}});
    CHECK(round_trip(ping) == ping);

    ServicesResult services{{full_status()}};
    CHECK(round_trip(services) == services);
}

TEST_CASE("logs, reload and explain results round-trip") {
    LogsResult logs{
        {LogLine{"stdout", "hello", 1.5}, LogLine{"stderr", "oops", 2.0}}, true, 3, "running"};
    CHECK(json(logs)["lines"][1] == json{{"stream", "stderr"}, {"text", "oops"}, {"at", 2.0}});
    CHECK(round_trip(logs) == logs);

    LogsResult none;
    CHECK(
        json(none) ==
        json{{"lines", json::array()}, {"truncated", false}, {"run", nullptr}, {"state", nullptr}});
    CHECK(round_trip(none) == none);

    ReloadResult reload{{"new"}, {"old"}, {"changed"}, 4, {}, {}};
    CHECK(json(reload)["unchanged"] == 4);
    CHECK(round_trip(reload) == reload);
    // SPEC §21: each start_first replacement the reload began, and the files' warnings.
    reload.replacements = {ReplacementResult{"web", false, "run 2 exited with code 3"},
                           ReplacementResult{"api", true, std::nullopt},
                           ReplacementResult{"db", std::nullopt, std::nullopt}};
    reload.warnings = {"services/web.toml:8:1: warning: ready.http: ..."};
    CHECK(json(reload)["replacements"][0] ==
          json{{"service", "web"}, {"ok", false}, {"reason", "run 2 exited with code 3"}});
    CHECK(json(reload)["replacements"][2] ==
          json{{"service", "db"}, {"ok", nullptr}, {"reason", nullptr}});
    CHECK(round_trip(reload) == reload);
    // An older pkitd's reply has neither.
    CHECK(json{{"added", json::array()},
               {"removed", json::array()},
               {"changed", json::array()},
               {"unchanged", 1}}
              .get<ReloadResult>()
              .replacements.empty());

    ReloadPreviewResult preview{
        {"new"},
        {"old"},
        {ChangedServiceResult{"web",
                              "start_first",
                              true,
                              {KeyChangeResult{"ready.http", "\"http://x/\"", std::nullopt}}}},
        2,
        {}};
    CHECK(json(preview)["dry_run"] == true);
    CHECK(json(preview)["changed"][0]["keys"][0] ==
          json{{"key", "ready.http"}, {"old", "\"http://x/\""}, {"new", nullptr}});
    CHECK(round_trip(preview) == preview);

    ExplainResult explain{"running since 3s", json{{"step", 2}}};
    CHECK(round_trip(explain) == explain);
}

TEST_CASE("events carry type, service, group and at, null when absent") {
    auto event = make_event("group_failed", std::nullopt, "backend", 10.0);
    CHECK(event ==
          json{{"type", "group_failed"}, {"service", nullptr}, {"group", "backend"}, {"at", 10.0}});
    auto started = make_event("started", "web", std::nullopt, 1.0);
    started["pid"] = 5;
    CHECK(started["group"].is_null());
    CHECK(started["pid"] == 5);
}

TEST_CASE("from_json refuses a status without its required fields") {
    CHECK_THROWS_AS(json::object().get<ServiceStatus>(), json::exception);
    CHECK_THROWS_AS((json{{"name", 1}, {"state", "x"}}.get<ServiceStatus>()), json::exception);
}
